"""MMR mode reads each candidate's stored vector after the search: a candidate whose
document is rewritten in between is left out (the store has no embedding model to embed
the text the search served), and MMR picks among the others."""

import ratchetdb
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

from ratchetdb.llama_index import RatchetVectorStore

QUERY_VECTOR = [1.0, 1.0, 0.0]


class RewriteBeforeFirstGet:
    """A Store whose first ``get`` is preceded by a write, as another writer's would be."""

    def __init__(self, store, rewrite):
        self._store, self._rewrite = store, rewrite

    def __getattr__(self, name):
        return getattr(self._store, name)

    def get(self, *args, **kwargs):
        if self._rewrite is not None:
            rewrite, self._rewrite = self._rewrite, None
            rewrite()
        return self._store.get(*args, **kwargs)


def test_mmr_node_rewritten_during_search(tmp_path):
    inner = ratchetdb.Store(tmp_path / "race.redb")
    plain = RatchetVectorStore(store=inner)
    plain.add(
        [
            TextNode(text="disk a", id_="a", embedding=[1.0, 0.25, 0.0]),
            TextNode(text="disk b", id_="b", embedding=[1.0, 0.25, 0.02]),
            TextNode(text="network", id_="net", embedding=[0.2, 1.0, 0.0]),
        ]
    )

    def rewrite():
        plain.delete("a")
        plain.add([TextNode(text="bread", id_="a", embedding=[0.0, 0.0, 1.0])])

    racing = RatchetVectorStore(store=RewriteBeforeFirstGet(inner, rewrite))
    query = VectorStoreQuery(query_embedding=QUERY_VECTOR, similarity_top_k=3, mode="mmr")
    result = racing.query(query, mmr_prefetch_k=3)
    assert result.ids == ["b", "net"]
    assert [n.get_content() for n in result.nodes] == ["disk b", "network"]
    # Without the race, all three candidates are there to pick from.
    assert sorted(plain.query(query, mmr_prefetch_k=3).ids) == ["a", "b", "net"]
    inner.close()
