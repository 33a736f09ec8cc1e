"""Issue 45 item 8: len(store) is the number of live documents (tombstones not counted)."""

import pytest

import ratchetdb


def test_len_counts_live_documents(store, path):
    assert len(store) == 0
    store.add("s", ["a", "b", "c"], 1, ["a", "b", "c"], [[1.0, 0.0]] * 3)
    store.upsert("s", "a", 2, ["a", "a2"], [[1.0, 0.0], [0.0, 1.0]])
    assert len(store) == 3
    store.delete("s", "b", 2)
    store.delete("s", "never-seen", 1)
    assert len(store) == 2
    store.close()
    with pytest.raises(ratchetdb.ClosedError):
        len(store)
    with ratchetdb.Store(path, read_only=True) as reader:
        assert len(reader) == 2
