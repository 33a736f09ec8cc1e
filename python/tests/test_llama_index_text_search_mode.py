"""Issue 45 item 4: ``vector_store_query_mode="text_search"`` failed (the retriever passes no
embedding in that mode). A text-search retriever finds nodes by their words (BM25),
embeds nothing, and honours filters and doc ids."""

from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from ratchetdb.llama_index import RatchetVectorStore


class CountingEmbedding(MockEmbedding):
    queries: int = 0

    def _get_query_embedding(self, query):
        self.queries += 1
        return super()._get_query_embedding(query)

    async def _aget_query_embedding(self, query):
        self.queries += 1
        return super()._get_query_embedding(query)


async def test_text_search_mode_finds_nodes_by_their_words(tmp_path):
    embed_model = CountingEmbedding(embed_dim=4)
    vector_store = RatchetVectorStore(tmp_path / "text.redb")
    docs = [
        Document(text="error E1234: the disk is full", id_="disk", metadata={"kind": "error"}),
        Document(text="error E999: the network is down", id_="net", metadata={"kind": "error"}),
        Document(text="E1234 also means the quota is exceeded", id_="quota", metadata={"kind": "advice"}),
    ]
    index = VectorStoreIndex.from_documents(
        docs,
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=embed_model,
    )

    retriever = index.as_retriever(similarity_top_k=5, vector_store_query_mode="text_search")
    for hits in (retriever.retrieve("E1234"), await retriever.aretrieve("E1234")):
        assert {n.node.ref_doc_id for n in hits} == {"disk", "quota"}
        assert all(n.score > 0 for n in hits)
    assert embed_model.queries == 0

    errors = index.as_retriever(
        similarity_top_k=5,
        vector_store_query_mode="text_search",
        filters=MetadataFilters(filters=[MetadataFilter(key="kind", value="error")]),
    )
    assert [n.node.ref_doc_id for n in errors.retrieve("E1234")] == ["disk"]
    only_quota = index.as_retriever(
        similarity_top_k=5, vector_store_query_mode="text_search", doc_ids=["quota"]
    )
    assert [n.node.ref_doc_id for n in only_quota.retrieve("E1234")] == ["quota"]
    assert retriever.retrieve("bread") == []
