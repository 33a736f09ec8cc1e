"""Nodes of one ref_doc_id arriving over several add() calls (VectorStoreIndex inserts in
batches of 2048) are merged, never wiped; plus doc_ids/node_ids, get_nodes, delete_nodes,
clear, and every filter operator that maps onto ratchetdb's language."""

import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from ratchetdb.llama_index import RatchetVectorStore, to_where


def node(node_id, ref, vec, **meta):
    n = TextNode(id_=node_id, text=f"text of {node_id}", embedding=vec, metadata=meta)
    n.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=ref)
    return n


@pytest.fixture
def vs(tmp_path):
    store = RatchetVectorStore(tmp_path / "m.redb")
    yield store
    store.close()


def query(vs, k=10, **kwargs):
    return vs.query(VectorStoreQuery(query_embedding=[1.0, 0.0, 0.0], similarity_top_k=k, **kwargs))


def test_several_adds_for_one_ref_doc_merge(vs):
    vs.add([node("n1", "doc", [1, 0, 0]), node("n2", "doc", [0, 1, 0])])
    vs.add([node("n3", "doc", [0, 0, 1])])
    assert sorted(n.node_id for n in vs.get_nodes()) == ["n1", "n2", "n3"]
    # Same node id again: replaced in place, not duplicated.
    replaced = node("n2", "doc", [0, 1, 0], v=2)
    replaced.text = "text of n2, edited"
    vs.add([replaced])
    nodes = vs.get_nodes()
    assert [n.node_id for n in nodes] == ["n1", "n2", "n3"]
    assert nodes[1].get_content() == "text of n2, edited" and nodes[1].metadata == {"v": 2}
    # The kept nodes kept their vectors: n1 is still the nearest to [1, 0, 0].
    result = query(vs, k=1)
    assert result.ids == ["n1"] and result.similarities[0] > 0.99
    assert vs.client.verify().ok


def test_doc_ids_node_ids_delete_nodes_clear(vs):
    vs.add([node(f"a{i}", "A", [1, i, 0]) for i in range(3)])
    vs.add([node(f"b{i}", "B", [1, 0, i]) for i in range(3)])
    assert {n.ref_doc_id for n in query(vs, doc_ids=["B"]).nodes} == {"B"}
    assert sorted(query(vs, node_ids=["a1", "b2"]).ids) == ["a1", "b2"]
    assert [n.node_id for n in vs.get_nodes(node_ids=["b1"])] == ["b1"]
    vs.delete_nodes(node_ids=["a0", "a2"])
    assert sorted(n.node_id for n in vs.get_nodes()) == ["a1", "b0", "b1", "b2"]
    vs.delete_nodes(node_ids=["a1"])
    assert vs.client.get("llama_index", "A")["deleted"]
    vs.delete("B")
    assert vs.get_nodes() == [] and query(vs).nodes == []
    vs.add([node("c0", "C", [1, 0, 0])])
    vs.clear()
    assert vs.get_nodes() == []


def test_filter_operators(vs):
    vs.add(
        [
            node("x1", "X", [1, 0, 0], n=1, tag="red", tags=["a", "b"], title="Hello world"),
            node("x2", "X", [1, 1, 0], n=2, tag="blue", tags=["b"], title="Goodbye"),
            node("x3", "Y", [1, 0, 1], n=3, tags=["c"], title=""),
        ]
    )

    def ids(*filters, condition=FilterCondition.AND):
        result = query(vs, filters=MetadataFilters(filters=list(filters), condition=condition))
        return sorted(result.ids)

    F, O = MetadataFilter, FilterOperator
    assert ids(F(key="n", value=2, operator=O.EQ)) == ["x2"]
    assert ids(F(key="tag", value="red", operator=O.NE)) == ["x2"]
    assert ids(F(key="n", value=1, operator=O.GT)) == ["x2", "x3"]
    assert ids(F(key="n", value=2, operator=O.GTE)) == ["x2", "x3"]
    assert ids(F(key="n", value=2, operator=O.LT)) == ["x1"]
    assert ids(F(key="n", value=2, operator=O.LTE)) == ["x1", "x2"]
    assert ids(F(key="tag", value=["red", "blue"], operator=O.IN)) == ["x1", "x2"]
    assert ids(F(key="tag", value=["red"], operator=O.NIN)) == ["x2"]
    assert ids(F(key="tags", value="b", operator=O.CONTAINS)) == ["x1", "x2"]
    assert ids(F(key="title", value="world", operator=O.TEXT_MATCH)) == ["x1"]
    assert ids(F(key="tags", value=["a", "c"], operator=O.ANY)) == ["x1", "x3"]
    assert ids(F(key="tags", value=["a", "b"], operator=O.ALL)) == ["x1"]
    assert ids(F(key="tag", value=None, operator=O.IS_EMPTY)) == ["x3"]
    assert ids(F(key="n", value=1), F(key="n", value=3), condition=FilterCondition.OR) == ["x1", "x3"]
    assert ids(F(key="n", value=1), F(key="n", value=3), condition=FilterCondition.NOT) == ["x2"]
    nested = MetadataFilters(
        filters=[F(key="n", value=1), F(key="n", value=2)], condition=FilterCondition.OR
    )
    assert ids(nested, F(key="tag", value="blue")) == ["x2"]
    with pytest.raises(ValueError):
        to_where(MetadataFilters(filters=[F(key="t", value="x", operator=O.TEXT_MATCH_INSENSITIVE)]))
    # get_nodes and delete_nodes take the same filters.
    red = MetadataFilters(filters=[F(key="tag", value="red")])
    assert [n.node_id for n in vs.get_nodes(filters=red)] == ["x1"]
    vs.delete_nodes(filters=red)
    assert sorted(n.node_id for n in vs.get_nodes()) == ["x2", "x3"]
