"""Issue 48: `Store(path, memory_budget=...)` reaches the Rust option: a store under a budget
answers searches with exact scores like an unbudgeted one, and a budget too small for the
store's live vectors is refused with an InputError naming `memory_budget` and the smallest
budget that works, leaving the store unchanged. `rerank` (the candidates a budgeted search
scores exactly from the file) is passed too: every score stays exact, and 0 is an InputError
naming `rerank`."""

import numpy as np
import pytest

import ratchetdb


def test_memory_budget(tmp_path):
    path = tmp_path / "budget.redb"
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 32)).astype(np.float32)
    with ratchetdb.Store(path) as store:
        store.add("s", [f"d{i}" for i in range(300)], 1, [f"text {i}" for i in range(300)], vectors)
        unbudgeted = store.search(vectors[5], 3)

    with pytest.raises(ratchetdb.InputError) as raised:
        ratchetdb.Store(path, memory_budget=1024)
    assert raised.value.field == "memory_budget"
    assert "smallest budget that works" in str(raised.value)

    with ratchetdb.Store(path, memory_budget=64 << 20) as store:
        assert len(store) == 300
        budgeted = store.search(vectors[5], 3)
        narrow = store.search(vectors[5], 3, ef=64, rerank=3)
        with pytest.raises(ratchetdb.InputError) as raised:
            store.search(vectors[5], 3, rerank=0)
        assert raised.value.field == "rerank"
        # Above Limits::max_k (10,000): refused by the store itself, so the value reached it.
        with pytest.raises(ratchetdb.InputError) as raised:
            store.search(vectors[5], 3, rerank=10_001)
        assert raised.value.field == "rerank"
        assert "at most" in str(raised.value)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert len(narrow) == 3
    for hit in narrow:
        assert abs(hit.score - float(unit[int(hit.id[1:])] @ unit[5])) < 1e-5
    assert budgeted[0].id == "d5"
    assert [h.id for h in budgeted] == [h.id for h in unbudgeted]
    assert np.allclose([h.score for h in budgeted], [h.score for h in unbudgeted], atol=1e-5)

    with pytest.raises(ratchetdb.InputError) as raised:
        ratchetdb.Store(path, memory_budget="lots")
    assert raised.value.field == "memory_budget"
