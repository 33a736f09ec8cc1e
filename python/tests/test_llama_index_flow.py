"""A VectorStoreIndex + MockEmbedding flow over RatchetVectorStore: insert, refresh_ref_docs
after edits, filtered queries, delete_ref_doc (the failures of run-llama/llama_index #14057,
#8832, #22133: refreshes that duplicate nodes or drop chunks)."""

from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from ratchetdb.llama_index import RatchetVectorStore


def text(doc, n, edit=""):
    return " ".join(f"{doc} sentence {i}{edit if i == 3 else ''}." for i in range(n))


def build(tmp_path):
    Settings.embed_model = MockEmbedding(embed_dim=8)
    vector_store = RatchetVectorStore(tmp_path / "li.redb")
    storage = StorageContext.from_defaults(vector_store=vector_store)
    splitter = SentenceSplitter(chunk_size=40, chunk_overlap=0)
    docs = [
        Document(text=text("alpha", 30), id_="alpha", metadata={"team": "red", "year": 2023}),
        Document(text=text("beta", 30), id_="beta", metadata={"team": "blue", "year": 2024}),
        Document(text=text("gamma", 30), id_="gamma", metadata={"team": "red", "year": 2025}),
    ]
    index = VectorStoreIndex.from_documents(
        docs, storage_context=storage, transformations=[splitter]
    )
    return vector_store, index, docs, splitter


def nodes_by_doc(vector_store):
    counts = {}
    for node in vector_store.get_nodes():
        counts[node.ref_doc_id] = counts.get(node.ref_doc_id, 0) + 1
    return counts


def test_insert_refresh_filter_delete(tmp_path):
    vector_store, index, docs, splitter = build(tmp_path)
    first = nodes_by_doc(vector_store)
    assert set(first) == {"alpha", "beta", "gamma"} and all(n > 1 for n in first.values())
    assert vector_store.client.stats()["documents"] == 3

    # Edit one document, refresh all: only it is rewritten, no node is duplicated or lost.
    edited = Document(text=text("beta", 30, edit=" edited"), id_="beta", metadata=docs[1].metadata)
    refreshed = index.refresh_ref_docs([docs[0], edited, docs[2]])
    assert refreshed == [False, True, False]
    expected = {**first, "beta": len(splitter.get_nodes_from_documents([edited]))}
    assert nodes_by_doc(vector_store) == expected
    ids = [n.node_id for n in vector_store.get_nodes()]
    assert len(ids) == len(set(ids))
    beta_texts = [n.get_content() for n in vector_store.get_nodes() if n.ref_doc_id == "beta"]
    assert any("edited" in t for t in beta_texts)
    assert vector_store.client.verify().ok

    # Filtered queries through the index's retriever.
    red = MetadataFilters(filters=[MetadataFilter(key="team", value="red")])
    hits = index.as_retriever(similarity_top_k=100, filters=red).retrieve("sentence")
    assert hits and {h.node.ref_doc_id for h in hits} == {"alpha", "gamma"}
    either = MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=2023),
            MetadataFilter(key="year", value=2024, operator=FilterOperator.GTE),
        ],
        condition=FilterCondition.OR,
    )
    hits = index.as_retriever(similarity_top_k=100, filters=either).retrieve("sentence")
    assert {h.node.ref_doc_id for h in hits} == {"alpha", "beta", "gamma"}
    not_red = MetadataFilters(
        filters=[MetadataFilter(key="team", value="red")], condition=FilterCondition.NOT
    )
    hits = index.as_retriever(similarity_top_k=100, filters=not_red).retrieve("sentence")
    assert {h.node.ref_doc_id for h in hits} == {"beta"}
    both = MetadataFilters(
        filters=[
            MetadataFilter(key="team", value="red"),
            MetadataFilter(key="year", value=2024, operator=FilterOperator.GT),
        ]
    )
    hits = index.as_retriever(similarity_top_k=100, filters=both).retrieve("sentence")
    assert {h.node.ref_doc_id for h in hits} == {"gamma"}

    # delete_ref_doc: a versioned tombstone; the document's nodes are gone from queries.
    index.delete_ref_doc("alpha")
    assert set(nodes_by_doc(vector_store)) == {"beta", "gamma"}
    hits = index.as_retriever(similarity_top_k=100).retrieve("alpha sentence")
    assert all(h.node.ref_doc_id != "alpha" for h in hits)
    stored = vector_store.client.get("llama_index", "alpha")
    assert stored["deleted"]

    # Reinsert after the delete: a newer ticket than the tombstone, so it is written.
    index.insert(docs[0])
    assert nodes_by_doc(vector_store) == expected
