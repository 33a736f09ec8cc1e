"""similarity_search(filter=...) uses the core metadata filter."""

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from ratchetdb.langchain import RatchetVectorStore


def test_similarity_search_filter_uses_the_metadata_filter(tmp_path):
    store = RatchetVectorStore(tmp_path / "f.redb", DeterministicFakeEmbedding(size=16))
    docs = [
        Document(page_content=f"doc {i}", metadata={"year": 2000 + i, "lang": "en" if i % 2 else "de"})
        for i in range(20)
    ]
    store.add_documents(docs)
    hits = store.similarity_search("doc 3", k=20, filter={"lang": "en", "year": {"$gte": 2010}})
    assert sorted(d.metadata["year"] for d in hits) == [2011, 2013, 2015, 2017, 2019]
    nothing = store.similarity_search("doc 3", k=5, filter={"lang": "fr"})
    assert nothing == []
    scored = store.similarity_search_with_score("doc 4", k=1, filter={"$or": [{"year": 2004}, {"year": 2005}]})
    assert scored[0][0].page_content == "doc 4" and scored[0][1] > 0.99
    store.close()
