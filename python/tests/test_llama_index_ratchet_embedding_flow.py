"""Issue 46 (embedders in the bindings): ratchetdb.llama_index.RatchetEmbedding is a
LlamaIndex BaseEmbedding: as the embed_model of a VectorStoreIndex over RatchetVectorStore
(opened with the same embedder, so the store records its model) it indexes documents and
answers retrievals, and its vectors are the embedder's."""

import numpy as np
from llama_index.core import Document, StorageContext, VectorStoreIndex

import ratchetdb
from ratchetdb.llama_index import RatchetEmbedding, RatchetVectorStore


def test_vector_store_index_with_ratchet_embedding(tmp_path):
    embedder = ratchetdb.HashingEmbedder(128)
    embed_model = RatchetEmbedding(embedder)
    assert embed_model.model_name == "hash-lexical-v1-128"
    vector_store = RatchetVectorStore(tmp_path / "li.redb", embedder=embedder)
    storage = StorageContext.from_defaults(vector_store=vector_store)
    docs = [
        Document(text="Bananas are yellow and grow in bunches.", id_="fruit"),
        Document(text="A lighthouse keeps ships off the rocks at night.", id_="sea"),
        Document(text="The ratchet turns one way only.", id_="tool"),
    ]
    index = VectorStoreIndex.from_documents(
        docs, storage_context=storage, embed_model=embed_model
    )
    assert vector_store.client.model == "hash-lexical-v1-128"
    retriever = index.as_retriever(similarity_top_k=1)
    assert retriever.retrieve("which fruit is yellow")[0].node.ref_doc_id == "fruit"
    assert retriever.retrieve("ships and rocks")[0].node.ref_doc_id == "sea"

    # The stored vectors are the embedder's, and the store's own search_query agrees.
    for node in vector_store.get_nodes():
        stored = vector_store.client.get("llama_index", node.ref_doc_id, vectors=True)
        vector = stored["chunks"][0]["vector"]
        expected = embedder.embed([stored["chunks"][0]["text"]])[0]
        np.testing.assert_allclose(vector, expected, rtol=0, atol=1e-6)
    assert vector_store.client.search_query("ratchet turns", k=1)[0].id == "tool"
    np.testing.assert_allclose(
        embed_model.get_query_embedding("one way"), embedder.embed(["one way"])[0], atol=1e-6
    )
    assert len(embed_model.get_text_embedding_batch(["a", "b", "c"])) == 3
    vector_store.close()
