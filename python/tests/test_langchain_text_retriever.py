"""Issue 45 item 4: text search was unreachable from LangChain (``search_type of text not
allowed``). ``as_retriever(search_type="text")`` and ``text_search`` find a chunk by an
exact word that its embedding does not bring near, apply the filter, and embed nothing."""

from langchain_core.embeddings import DeterministicFakeEmbedding

from ratchetdb.langchain import RatchetVectorStore


class CountingEmbeddings(DeterministicFakeEmbedding):
    queries: int = 0

    def embed_query(self, text):
        self.queries += 1
        return super().embed_query(text)


async def test_text_retriever_finds_the_exact_word(tmp_path):
    embeddings = CountingEmbeddings(size=16)
    store = RatchetVectorStore(tmp_path / "text.redb", embeddings)
    store.add_texts(
        [
            "error E1234: the disk is full",
            "error E999: the network is down",
            "free some space and retry",
            "E1234 is also raised when the quota is exceeded",
        ],
        [{"kind": "error"}, {"kind": "error"}, {"kind": "advice"}, {"kind": "advice"}],
    )

    retriever = store.as_retriever(search_type="text", search_kwargs={"k": 5})
    for docs in (retriever.invoke("E1234"), await retriever.ainvoke("E1234")):
        assert {d.page_content for d in docs} == {
            "error E1234: the disk is full",
            "E1234 is also raised when the quota is exceeded",
        }
    assert embeddings.queries == 0

    filtered = store.text_search("E1234", k=5, filter={"kind": "error"})
    assert [d.page_content for d in filtered] == ["error E1234: the disk is full"]
    scored = store.text_search_with_score("network", k=5)
    assert [d.page_content for d, _ in scored] == ["error E999: the network is down"]
    assert scored[0][1] > 0
    assert store.search("nothing matches this", search_type="text") == []
    store.close()
