"""Issue 45 item 4 (LlamaIndex side of the MMR gap): ``vector_store_query_mode="mmr"`` was
served as a plain vector search. Where plain similarity returns near-duplicates, the MMR
retriever returns one of them and the next different node, from the stored vectors."""

from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

from ratchetdb.llama_index import RatchetVectorStore

QUERY_VECTOR = [1.0, 1.0, 0.0]
NODES = {
    "dup-a": [1.0, 0.25, 0.0],
    "dup-b": [1.0, 0.25, 0.02],
    "dup-c": [1.0, 0.25, -0.02],
    "net": [0.2, 1.0, 0.0],
    "bread": [0.0, 0.0, 1.0],
}
DUPLICATES = {"dup-a", "dup-b", "dup-c"}


class QueryEmbedding(MockEmbedding):
    def _get_query_embedding(self, query):
        return QUERY_VECTOR

    async def _aget_query_embedding(self, query):
        return QUERY_VECTOR


async def test_mmr_mode_skips_near_duplicates(tmp_path):
    vector_store = RatchetVectorStore(tmp_path / "mmr.redb")
    nodes = [TextNode(text=f"node {i}", id_=i, embedding=v) for i, v in NODES.items()]
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=QueryEmbedding(embed_dim=3),
    )

    plain = index.as_retriever(similarity_top_k=2).retrieve("slow server")
    assert {n.node.node_id for n in plain} <= DUPLICATES

    mmr = index.as_retriever(
        similarity_top_k=2,
        vector_store_query_mode="mmr",
        vector_store_kwargs={"mmr_threshold": 0.5},
    )
    for hits in (mmr.retrieve("slow server"), await mmr.aretrieve("slow server")):
        ids = [n.node.node_id for n in hits]
        assert ids[0] in DUPLICATES and ids[1] == "net"

    # mmr_threshold=1 ignores diversity: the similarity order.
    same = vector_store.query(
        VectorStoreQuery(query_embedding=QUERY_VECTOR, similarity_top_k=3, mode="mmr", mmr_threshold=1.0)
    )
    nearest = vector_store.query(VectorStoreQuery(query_embedding=QUERY_VECTOR, similarity_top_k=3))
    assert same.ids == nearest.ids
    # The candidates are the nearest mmr_prefetch_k: with 2, no room to diversify.
    narrow = vector_store.query(
        VectorStoreQuery(query_embedding=QUERY_VECTOR, similarity_top_k=2, mode="mmr"),
        mmr_prefetch_k=2,
    )
    assert set(narrow.ids) <= DUPLICATES
