"""Bug: the LangChain and LlamaIndex stores forwarded ``ef`` to the store's searches but
dropped ``rerank`` (the candidates a budgeted search scores again from the file), so a
caller's width was silently ignored. Each search path must hand it to the store: a
``rerank`` above the store's ``Limits.max_k`` comes back as the store's ``InputError``
naming ``rerank``, and one in range answers as before."""

import pytest
from langchain_core.embeddings import Embeddings
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from ratchetdb import InputError
from ratchetdb.langchain import RatchetVectorStore as LangChainStore
from ratchetdb.llama_index import RatchetVectorStore as LlamaIndexStore

TEXTS = {
    "error E1234: the disk is full": [1.0, 0.0, 0.0],
    "the network cable is unplugged": [0.0, 1.0, 0.0],
    "a recipe for bread": [0.0, 0.3, 1.0],
}
# Above the default `Limits.max_k` (10,000): only the store's own check refuses it.
TOO_WIDE = 10_001


class TableEmbeddings(Embeddings):
    def embed_documents(self, texts):
        return [TEXTS[t] for t in texts]

    def embed_query(self, text):
        return [0.1, 1.0, 0.0]


def test_langchain_searches_pass_rerank(tmp_path):
    store = LangChainStore(tmp_path / "lc.redb", TableEmbeddings())
    store.add_texts(list(TEXTS))
    calls = {
        "similarity": lambda **kw: store.similarity_search_with_score("cable", k=2, **kw),
        "mmr": lambda **kw: store.max_marginal_relevance_search("cable", k=2, fetch_k=3, **kw),
        "hybrid": lambda **kw: store.hybrid_search_with_score("cable", k=2, **kw),
    }
    for name, call in calls.items():
        with pytest.raises(InputError) as raised:
            call(rerank=TOO_WIDE)
        assert raised.value.field == "rerank", name
        assert len(call(rerank=5)) == 2, name


def test_llama_index_queries_pass_rerank(tmp_path):
    store = LlamaIndexStore(tmp_path / "li.redb")
    store.add(
        [
            TextNode(text=text, id_=f"n{i}", embedding=vector)
            for i, (text, vector) in enumerate(TEXTS.items())
        ]
    )
    modes = {
        VectorStoreQueryMode.DEFAULT: {},
        VectorStoreQueryMode.MMR: {"mmr_threshold": 0.5},
        VectorStoreQueryMode.HYBRID: {"query_str": "cable"},
    }
    for mode, extra in modes.items():
        query = VectorStoreQuery(
            query_embedding=[0.1, 1.0, 0.0], similarity_top_k=2, mode=mode, **extra
        )
        with pytest.raises(InputError) as raised:
            store.query(query, rerank=TOO_WIDE)
        assert raised.value.field == "rerank", mode
        assert len(store.query(query, rerank=5).nodes) == 2, mode
