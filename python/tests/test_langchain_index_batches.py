"""ratchetdb.langchain.index: the guarded replacement of LangChain's index() + record
manager, on the scenarios of the LangChain issue threads (a source split across batches is
re-embedded or half-deleted: langchain-ai/langchain #22135, #32612, #21028, #19335)."""

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from ratchetdb.langchain import RatchetVectorStore, index


class CountingEmbedding(DeterministicFakeEmbedding):
    calls: int = 0
    texts: int = 0

    def embed_documents(self, texts):
        self.calls += 1
        self.texts += len(texts)
        return super().embed_documents(texts)


def chunks(source, n, edit=None):
    return [
        Document(
            page_content=f"{source} chunk {i}" + (f" {edit}" if edit and i == 150 else ""),
            metadata={"source": source, "i": i},
        )
        for i in range(n)
    ]


def store_of(tmp_path):
    return RatchetVectorStore(tmp_path / "idx.redb", CountingEmbedding(size=8))


def test_200_chunks_of_one_source_batch_100_run_twice(tmp_path):
    vs = store_of(tmp_path)
    first = index(chunks("a.txt", 200), vs, cleanup="incremental", batch_size=100)
    assert first == {"num_added": 200, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
    assert vs.embedding.texts == 200
    second = index(chunks("a.txt", 200), vs, cleanup="incremental", batch_size=100)
    assert second["num_added"] == 0 and second["num_deleted"] == 0
    assert second["num_skipped"] == 200
    assert vs.embedding.texts == 200  # nothing embedded again
    assert vs.store.stats()["chunks"] == 200
    assert vs.store.verify().ok


def test_an_edit_reembeds_only_the_changed_chunk_and_keeps_every_other(tmp_path):
    vs = store_of(tmp_path)
    index(chunks("a.txt", 200), vs, cleanup="incremental", batch_size=100)
    result = index(chunks("a.txt", 200, edit="v2"), vs, cleanup="incremental", batch_size=100)
    assert result == {"num_added": 0, "num_updated": 1, "num_skipped": 199, "num_deleted": 0}
    assert vs.embedding.texts == 201
    assert vs.store.stats()["chunks"] == 200
    stored = vs.store.get("langchain", "a.txt")
    assert stored["chunks"][150]["text"].endswith("v2")


def test_a_shrunken_source_loses_exactly_its_surplus(tmp_path):
    vs = store_of(tmp_path)
    index(chunks("a.txt", 200), vs, cleanup=None, batch_size=100)
    result = index(chunks("a.txt", 120), vs, cleanup=None, batch_size=100)
    assert result["num_deleted"] == 80 and result["num_added"] == 0
    assert vs.store.stats()["chunks"] == 120


def test_cleanup_full_deletes_sources_missing_from_the_run(tmp_path):
    vs = store_of(tmp_path)
    index(chunks("a.txt", 30) + chunks("b.txt", 20), vs, cleanup="full", batch_size=10)
    incremental = index(chunks("a.txt", 30), vs, cleanup="incremental", batch_size=10)
    assert incremental["num_deleted"] == 0
    assert vs.store.stats()["chunks"] == 50
    full = index(chunks("a.txt", 30), vs, cleanup="full", batch_size=10)
    assert full["num_deleted"] == 20 and full["num_skipped"] == 30
    assert vs.store.stats()["chunks"] == 30
    hits = vs.similarity_search("b.txt chunk 3", k=50)
    assert all(h.metadata["source"] == "a.txt" for h in hits)


def test_interleaved_sources_across_batches_are_grouped(tmp_path):
    vs = store_of(tmp_path)
    docs = [d for pair in zip(chunks("a.txt", 50), chunks("b.txt", 50)) for d in pair]
    first = index(docs, vs, cleanup="incremental", batch_size=7)
    assert first["num_added"] == 100
    again = index(list(reversed(docs))[::-1], vs, cleanup="incremental", batch_size=13)
    assert again == {"num_added": 0, "num_updated": 0, "num_skipped": 100, "num_deleted": 0}
    assert vs.store.stats()["documents"] == 2


def test_cleanup_needs_a_source_id(tmp_path):
    import pytest

    vs = store_of(tmp_path)
    with pytest.raises(ValueError):
        index([Document(page_content="x")], vs, cleanup="incremental")
    result = index([Document(page_content="x")], vs, cleanup=None)
    assert result["num_added"] == 1
