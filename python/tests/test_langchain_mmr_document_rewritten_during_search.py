"""MMR reads each candidate's stored vector after the search: when a candidate's document is
rewritten in between, the candidate keeps the text the search served and that text is
embedded for it (the new revision's vector would not match it)."""

import ratchetdb
from langchain_core.embeddings import Embeddings

from ratchetdb.langchain import RatchetVectorStore

VECTORS = {
    "the disk is full (a)": [1.0, 0.25, 0.0],
    "the disk is full (b)": [1.0, 0.25, 0.02],
    "the network is down": [0.2, 1.0, 0.0],
    "why is the server slow": [1.0, 1.0, 0.0],
    "a recipe for bread": [0.0, 0.0, 1.0],
}


class TableEmbeddings(Embeddings):
    def __init__(self):
        self.embedded = []

    def embed_documents(self, texts):
        self.embedded.extend(texts)
        return [VECTORS[t] for t in texts]

    def embed_query(self, text):
        return VECTORS[text]


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


def test_mmr_document_rewritten_during_search(tmp_path):
    embeddings = TableEmbeddings()
    inner = ratchetdb.Store(tmp_path / "race.redb")
    plain = RatchetVectorStore(None, embeddings, store=inner)
    plain.add_texts(list(VECTORS)[:3], ids=["a", "b", "net"])
    embeddings.embedded.clear()

    def rewrite():
        # "a" now holds the bread recipe, far from the query.
        plain.add_texts(["a recipe for bread"], ids=["a"])

    racing = RatchetVectorStore(None, embeddings, store=RewriteBeforeFirstGet(inner, rewrite))
    docs = racing.max_marginal_relevance_search("why is the server slow", k=2, fetch_k=3)
    assert [d.page_content for d in docs] == ["the disk is full (a)", "the network is down"]
    # The rewrite embedded the recipe; MMR embedded only the stale hit's text.
    assert embeddings.embedded == ["a recipe for bread", "the disk is full (a)"]
    inner.close()
