"""Issue 46 (embedders in the bindings): ratchetdb.langchain.RatchetEmbeddings passes
LangChain's own standard tests, as an Embeddings model (EmbeddingsIntegrationTests) and as
the embedding of RatchetVectorStore (VectorStoreIntegrationTests, sync and async: the store
is opened with the embedder and embeds the texts itself)."""

import pytest
from langchain_tests.integration_tests import (
    EmbeddingsIntegrationTests,
    VectorStoreIntegrationTests,
)

import ratchetdb
from ratchetdb.langchain import RatchetEmbeddings, RatchetVectorStore


class TestRatchetEmbeddings(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self):
        return RatchetEmbeddings

    @property
    def embedding_model_params(self):
        return {"embedder": ratchetdb.HashingEmbedder(64)}


class TestRatchetVectorStoreWithRatchetEmbeddings(VectorStoreIntegrationTests):
    @staticmethod
    def get_embeddings():
        return RatchetEmbeddings(ratchetdb.HashingEmbedder(64))

    @pytest.fixture()
    def vectorstore(self, tmp_path):
        store = RatchetVectorStore(tmp_path / "lc.redb", self.get_embeddings())
        assert store.store.model == "hash-lexical-v1-64" and store._store_embeds()
        try:
            yield store
        finally:
            store.close()

    @property
    def has_sync(self) -> bool:
        return True

    @property
    def has_async(self) -> bool:
        return True
