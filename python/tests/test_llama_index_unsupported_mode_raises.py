"""Issue 45 item 4: a query mode RatchetVectorStore does not run was silently served as a
plain vector search. Every unsupported mode, and a field its mode would not use (``alpha``
outside hybrid, ``mmr_threshold`` outside mmr, ``sparse_top_k``), raises ValueError naming it; a mode missing its input
says which."""

import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from ratchetdb.llama_index import RatchetVectorStore

SUPPORTED = {
    VectorStoreQueryMode.DEFAULT,
    VectorStoreQueryMode.TEXT_SEARCH,
    VectorStoreQueryMode.HYBRID,
    VectorStoreQueryMode.MMR,
}


def test_unsupported_mode_raises(tmp_path):
    store = RatchetVectorStore(tmp_path / "modes.redb")
    store.add([TextNode(text="the disk is full", id_="a", embedding=[1.0, 0.0])])
    full = dict(query_str="disk", query_embedding=[1.0, 0.0], similarity_top_k=1)

    for mode in set(VectorStoreQueryMode) - SUPPORTED:
        with pytest.raises(ValueError, match=f"vector_store_query_mode '{mode.value}' is not supported"):
            store.query(VectorStoreQuery(mode=mode, **full))
    with pytest.raises(ValueError, match="text_search"):
        store.query(VectorStoreQuery(mode="sparse", **full))

    with pytest.raises(ValueError, match="alpha"):
        store.query(VectorStoreQuery(mode="default", alpha=0.5, **full))
    with pytest.raises(ValueError, match="alpha"):
        store.query(VectorStoreQuery(mode="text_search", alpha=0.5, **full))
    with pytest.raises(ValueError, match="alpha"):
        store.query(VectorStoreQuery(mode="hybrid", alpha=1.5, **full))
    with pytest.raises(ValueError, match="mmr_threshold"):
        store.query(VectorStoreQuery(mode="default", mmr_threshold=0.5, **full))
    with pytest.raises(ValueError, match="mmr_threshold"):
        store.query(VectorStoreQuery(mode="mmr", mmr_threshold=2.0, **full))
    with pytest.raises(ValueError, match="sparse_top_k"):
        store.query(VectorStoreQuery(mode="hybrid", sparse_top_k=5, **full))

    with pytest.raises(ValueError, match="query_str"):
        store.query(VectorStoreQuery(mode="text_search", query_embedding=[1.0, 0.0]))
    with pytest.raises(ValueError, match="query_str"):
        store.query(VectorStoreQuery(mode="hybrid", query_embedding=[1.0, 0.0]))
    with pytest.raises(ValueError, match="query_embedding"):
        store.query(VectorStoreQuery(mode="hybrid", query_str="disk"))
    with pytest.raises(ValueError, match="query_embedding"):
        store.query(VectorStoreQuery(mode="default", query_str="disk"))

    # The supported modes answer.
    for mode in SUPPORTED:
        assert store.query(VectorStoreQuery(mode=mode, **full)).ids == ["a"]
