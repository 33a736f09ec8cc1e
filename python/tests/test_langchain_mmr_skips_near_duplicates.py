"""Issue 45 item 4: ``max_marginal_relevance_search`` raised an empty NotImplementedError.
Where plain similarity returns near-duplicates, MMR returns one of them and the next
different chunk, from the stored vectors (nothing is embedded again)."""

from langchain_core.embeddings import Embeddings

from ratchetdb.langchain import RatchetVectorStore

# Three near-duplicates just closer to the query than a different chunk.
VECTORS = {
    "the disk is full (a)": [1.0, 0.25, 0.0],
    "the disk is full (b)": [1.0, 0.25, 0.02],
    "the disk is full (c)": [1.0, 0.25, -0.02],
    "the network is down": [0.2, 1.0, 0.0],
    "a recipe for bread": [0.0, 0.0, 1.0],
    "why is the server slow": [1.0, 1.0, 0.0],
}
DUPLICATES = {t for t in VECTORS if t.startswith("the disk is full")}


class TableEmbeddings(Embeddings):
    def __init__(self):
        self.embedded_documents = 0

    def embed_documents(self, texts):
        self.embedded_documents += len(texts)
        return [VECTORS[t] for t in texts]

    def embed_query(self, text):
        return VECTORS[text]


def test_mmr_skips_near_duplicates(tmp_path):
    embeddings = TableEmbeddings()
    store = RatchetVectorStore(tmp_path / "mmr.redb", embeddings)
    store.add_texts(list(VECTORS)[:-1], [{"n": n} for n in range(5)])
    embedded = embeddings.embedded_documents
    query = "why is the server slow"

    plain = [d.page_content for d in store.similarity_search(query, k=2)]
    assert set(plain) <= DUPLICATES and len(set(plain)) == 2

    mmr = [d.page_content for d in store.max_marginal_relevance_search(query, k=2, fetch_k=5)]
    assert mmr[0] in DUPLICATES and mmr[1] == "the network is down"
    assert embeddings.embedded_documents == embedded

    # lambda_mult=1 ignores diversity: the similarity order.
    same = store.max_marginal_relevance_search(query, k=3, fetch_k=5, lambda_mult=1.0)
    assert [d.page_content for d in same] == [
        d.page_content for d in store.similarity_search(query, k=3)
    ]
    # The filter applies to the candidates; by vector is the same search.
    filtered = store.max_marginal_relevance_search_by_vector(
        VECTORS[query], k=2, fetch_k=5, filter={"n": {"$gte": 1}}
    )
    assert filtered[0].metadata["n"] in (1, 2) and filtered[1].metadata["n"] == 3
    store.close()
