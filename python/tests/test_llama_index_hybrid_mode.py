"""Issue 45 item 4: ``vector_store_query_mode="hybrid"`` was silently ignored (a plain vector
search). A hybrid retriever merges the node the query's embedding points at with the node
its words match; ``alpha`` leans the fusion (0: words only, 1: vectors only)."""

from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from ratchetdb.llama_index import RatchetVectorStore

WORDS = "error E1234: the disk is full"
VECTOR = "the network cable is unplugged"
QUERY = "what does E1234 mean"


class QueryEmbedding(MockEmbedding):
    """Every query embeds near the network node; the nodes carry their own embeddings."""

    def _get_query_embedding(self, query):
        return [0.1, 1.0, 0.0]

    async def _aget_query_embedding(self, query):
        return [0.1, 1.0, 0.0]


def build(tmp_path):
    vector_store = RatchetVectorStore(tmp_path / "hybrid.redb")
    nodes = [
        TextNode(text=WORDS, id_="disk", embedding=[1.0, 0.0, 0.0], metadata={"n": 0}),
        TextNode(text=VECTOR, id_="net", embedding=[0.0, 1.0, 0.0], metadata={"n": 1}),
        TextNode(text="a recipe for bread", id_="bread", embedding=[0.0, 0.3, 1.0], metadata={"n": 2}),
    ]
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=QueryEmbedding(embed_dim=3),
    )
    return vector_store, index


async def test_hybrid_mode_merges_words_and_vectors(tmp_path):
    vector_store, index = build(tmp_path)

    # By vectors alone the second node is the bread recipe, not the one with the words.
    plain = index.as_retriever(similarity_top_k=2).retrieve(QUERY)
    assert [n.node.node_id for n in plain] == ["net", "bread"]

    hybrid = index.as_retriever(similarity_top_k=2, vector_store_query_mode="hybrid")
    for hits in (hybrid.retrieve(QUERY), await hybrid.aretrieve(QUERY)):
        assert {n.node.get_content() for n in hits} == {WORDS, VECTOR}

    words = index.as_retriever(similarity_top_k=1, vector_store_query_mode="hybrid", alpha=0.0)
    assert [n.node.node_id for n in words.retrieve(QUERY)] == ["disk"]
    vectors = index.as_retriever(similarity_top_k=1, vector_store_query_mode="hybrid", alpha=1.0)
    assert [n.node.node_id for n in vectors.retrieve(QUERY)] == ["net"]

    # Straight on the store: hybrid_top_k is the count, filters apply.
    result = vector_store.query(
        VectorStoreQuery(
            query_str=QUERY,
            query_embedding=[0.1, 1.0, 0.0],
            similarity_top_k=1,
            hybrid_top_k=3,
            mode="hybrid",
            filters=MetadataFilters(filters=[MetadataFilter(key="n", value=1, operator="!=")]),
        )
    )
    assert result.ids[0] == "disk" and "net" not in result.ids
    assert len(result.similarities) == len(result.nodes) == len(result.ids)
