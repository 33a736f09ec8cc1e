"""Regression (review): a search hit of an ``index``-written source carries the LangChain id
``"<source id>#<n>"`` for its chunk n. ``get_by_ids`` of such an id found nothing, and
``delete`` of it wrote a tombstone for a document ``"<id>#<n>"`` that never existed, leaving
the chunk. Now ``get_by_ids`` returns that chunk, and ``delete`` refuses it (the source is one
document) before writing anything."""

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from ratchetdb import InputError
from ratchetdb.langchain import RatchetVectorStore, index


def test_chunk_ids_are_read_back_one_by_one_and_refused_by_delete(tmp_path):
    vs = RatchetVectorStore(tmp_path / "idx.redb", DeterministicFakeEmbedding(size=8))
    texts = ["alpha kettle", "beta descaling", "gamma firmware"]
    index([Document(page_content=t, metadata={"source": "manual"}) for t in texts], vs)

    (read,) = vs.get_by_ids(["manual#2"])
    assert read.id == "manual#2" and read.page_content == "gamma firmware"
    assert vs.get_by_ids(["manual#7", "nothing#1", "manual#02"]) == []

    before = vs.store.stats()
    with pytest.raises(InputError) as refused:
        vs.delete(["other", "manual#2"])
    assert refused.value.field == "ids[1]" and "manual" in str(refused.value)
    assert vs.store.stats() == before  # nothing written, not even the first id
    assert len(vs.get_by_ids(["manual"])) == 3

    # The source's own id deletes the whole source.
    vs.delete(["manual"])
    assert vs.get_by_ids(["manual", "manual#2"]) == []
    assert vs.store.verify().ok
