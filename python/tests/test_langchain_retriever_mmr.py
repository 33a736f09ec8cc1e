"""Issue 45 item 4: ``as_retriever(search_type="mmr")`` raised an empty NotImplementedError.
The MMR retriever, sync and async, returns one of the near-duplicates and the next
different chunk where the similarity retriever returns near-duplicates."""

from langchain_core.embeddings import Embeddings

from ratchetdb.langchain import RatchetVectorStore

VECTORS = {
    "the disk is full (a)": [1.0, 0.25, 0.0],
    "the disk is full (b)": [1.0, 0.25, 0.02],
    "the disk is full (c)": [1.0, 0.25, -0.02],
    "the network is down": [0.2, 1.0, 0.0],
    "why is the server slow": [1.0, 1.0, 0.0],
}
DUPLICATES = {t for t in VECTORS if t.startswith("the disk is full")}


class TableEmbeddings(Embeddings):
    def embed_documents(self, texts):
        return [VECTORS[t] for t in texts]

    def embed_query(self, text):
        return VECTORS[text]


async def test_retriever_with_mmr(tmp_path):
    store = RatchetVectorStore(tmp_path / "mmr.redb", TableEmbeddings())
    store.add_texts(list(VECTORS)[:-1])
    query = "why is the server slow"

    similar = store.as_retriever(search_kwargs={"k": 2}).invoke(query)
    assert {d.page_content for d in similar} <= DUPLICATES

    retriever = store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 4})
    for docs in (retriever.invoke(query), await retriever.ainvoke(query)):
        assert docs[0].page_content in DUPLICATES
        assert docs[1].page_content == "the network is down"
    store.close()
