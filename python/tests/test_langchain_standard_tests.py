"""RatchetVectorStore passes LangChain's own VectorStoreIntegrationTests, sync and async."""

import pytest
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from ratchetdb.langchain import RatchetVectorStore


class TestRatchetVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self, tmp_path):
        store = RatchetVectorStore(tmp_path / "lc.redb", self.get_embeddings())
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
