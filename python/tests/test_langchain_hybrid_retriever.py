"""Issue 45 item 4: hybrid search was unreachable from LangChain (``search_type of hybrid
not allowed``). ``as_retriever(search_type="hybrid")`` and ``hybrid_search`` merge the
chunk the query's vector points at with the chunk its words match; ``vector_weight``
leans the fusion either way."""

from langchain_core.embeddings import Embeddings

from ratchetdb.langchain import RatchetVectorStore

TEXTS = {
    "error E1234: the disk is full": [1.0, 0.0, 0.0],
    "the network cable is unplugged": [0.0, 1.0, 0.0],
    "a recipe for bread": [0.0, 0.3, 1.0],
}
QUERY = "what does E1234 mean"


class TableEmbeddings(Embeddings):
    def embed_documents(self, texts):
        return [TEXTS[t] for t in texts]

    def embed_query(self, text):
        # The question's embedding points at the network chunk; its words at the disk chunk.
        return [0.1, 1.0, 0.0]


async def test_hybrid_retriever_merges_words_and_vectors(tmp_path):
    store = RatchetVectorStore(tmp_path / "hybrid.redb", TableEmbeddings())
    store.add_texts(list(TEXTS), [{"n": n} for n in range(3)])
    words, vector = "error E1234: the disk is full", "the network cable is unplugged"

    # By vectors alone the second chunk is the bread recipe, not the one with the words.
    assert [d.page_content for d in store.similarity_search(QUERY, k=2)] == [
        vector,
        "a recipe for bread",
    ]
    retriever = store.as_retriever(search_type="hybrid", search_kwargs={"k": 2})
    for docs in (retriever.invoke(QUERY), await retriever.ainvoke(QUERY)):
        assert {d.page_content for d in docs} == {words, vector}

    leaning = store.as_retriever(
        search_type="hybrid", search_kwargs={"k": 1, "vector_weight": 0.0}
    )
    assert [d.page_content for d in leaning.invoke(QUERY)] == [words]
    assert [d.page_content for d in store.hybrid_search(QUERY, k=1, vector_weight=1.0)] == [
        vector
    ]
    filtered = store.hybrid_search_with_score(QUERY, k=3, filter={"n": {"$ne": 0}})
    assert [d.page_content for d, _ in filtered][0] == vector
    assert words not in [d.page_content for d, _ in filtered]
    store.close()
