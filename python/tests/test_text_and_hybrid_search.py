"""Text (BM25) and hybrid search from Python: exact words are found, a superseded revision's
words never are, filters apply, hybrid merges both rankings, and bad arguments raise
InputError naming the field."""

import numpy as np
import pytest

import ratchetdb


def _docs(store):
    store.upsert(
        "kb",
        "disk.md",
        1,
        ["error E1234: the disk is full", "free some space and retry"],
        np.array([[1, 0, 0], [0.9, 0.1, 0]], dtype=np.float32),
        metas=[{"kind": "error"}, {"kind": "advice"}],
    )
    store.upsert(
        "kb",
        "net.md",
        1,
        ["error E999: the network is down", "check the cable"],
        np.array([[0, 1, 0], [0, 0.9, 0.1]], dtype=np.float32),
        metas=[{"kind": "error"}, {"kind": "advice"}],
    )


def test_search_text_finds_the_exact_word(store):
    _docs(store)
    hits = store.search_text("E1234", k=5)
    assert [h.text for h in hits] == ["error E1234: the disk is full"]
    assert hits[0].id == "disk.md" and hits[0].score > 0
    both = store.search_text("error", k=5)
    assert {h.id for h in both} == {"disk.md", "net.md"}


def test_search_text_never_returns_a_superseded_revision(store):
    _docs(store)
    store.upsert("kb", "disk.md", 2, ["the disk was replaced"], np.array([[1, 0, 0]], dtype=np.float32))
    assert store.search_text("E1234", k=5) == []
    assert [h.version for h in store.search_text("replaced", k=5)] == [2]
    store.delete("kb", "disk.md", 3)
    assert store.search_text("replaced", k=5) == []


def test_search_text_applies_where_and_sources(store):
    _docs(store)
    hits = store.search_text("the", k=10, where={"kind": "advice"})
    assert all(h.meta["kind"] == "advice" for h in hits)
    errors = store.search_text("the", k=10, where={"kind": "error"})
    assert {h.id for h in errors} == {"disk.md", "net.md"}
    assert [h.source for h in store.search_text("error", k=10, sources=["kb"])] == ["kb", "kb"]


def test_search_hybrid_merges_text_and_vector(store):
    _docs(store)
    # The vector points at the network chunk, the words at the disk chunk: both rank.
    hits = store.search_hybrid("E1234", np.array([0, 1, 0], dtype=np.float32), k=2)
    assert {h.text for h in hits} == {
        "error E1234: the disk is full",
        "error E999: the network is down",
    }
    weighted = store.search_hybrid(
        "E1234", np.array([0, 1, 0], dtype=np.float32), k=1, vector_weight=0.0
    )
    assert weighted[0].text == "error E1234: the disk is full"


def test_bad_text_search_arguments_raise_input_error(store):
    _docs(store)
    with pytest.raises(ratchetdb.InputError) as info:
        store.search_text("disk", k=0)
    assert info.value.field == "k"
    with pytest.raises(ratchetdb.InputError) as info:
        store.search_hybrid("disk", np.array([1, 0, 0], dtype=np.float32), rrf_k=60, vector_weight=0.5)
    assert info.value.field == "vector_weight"
    with pytest.raises(ratchetdb.InputError):
        store.search_hybrid("disk", np.array([1, 0], dtype=np.float32))
