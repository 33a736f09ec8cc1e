# Issue 45 item 7: a loop of store.upsert(...) paid one commit (fsync) per document; Python
# had no list-shaped call people reach for first. Store.add writes many one-text documents
# in one call and one commit, refuses the whole call when any item is bad (naming it), and
# returns one outcome per item.
"""Store.add: one call, one commit, per-item outcomes; a bad item refuses the whole call."""

import numpy as np
import pytest

import ratchetdb


def test_add_writes_every_item_in_one_commit_and_returns_its_outcome(store):
    n = 50
    vectors = np.random.default_rng(7).normal(size=(n, 8)).astype(np.float32)
    ids = [f"doc-{i}" for i in range(n)]
    texts = [f"text number {i}" for i in range(n)]
    metas = [{"i": i} for i in range(n)]
    batches_before = store.stats()["writer"]["batches"]
    results = store.add("wiki", ids, 1, texts, vectors, metas)
    assert [r.status for r in results] == ["written"] * n
    assert len(store) == n
    # One transaction: the writer committed nothing for it, and every item is there.
    assert store.stats()["writer"]["batches"] == batches_before
    for i in (0, 17, n - 1):
        doc = store.get("wiki", ids[i], vectors=True)
        assert doc["chunks"][0]["text"] == texts[i]
        assert doc["chunks"][0]["meta"] == metas[i]
        np.testing.assert_allclose(doc["chunks"][0]["vector"], vectors[i] / np.linalg.norm(vectors[i]), rtol=1e-5)
    hit = store.search(vectors[17], k=1)[0]
    assert (hit.id, hit.meta) == (ids[17], {"i": 17})
    # Guarded per item, like upsert: stale items are skipped, newer ones written.
    again = store.add(["wiki", "wiki"], ids[:2], [1, 2], texts[:2], vectors[:2], metas[:2])
    assert [(r.status, r.reason) for r in again] == [("skipped", "duplicate"), ("unchanged", None)]


@pytest.mark.parametrize(
    "change, field, kind",
    [
        (dict(vectors=[[1.0, 0.0], [1.0, 0.0], [1.0, 0.0, 0.0]]), "vectors[2]", ratchetdb.DimensionMismatchError),
        (dict(vectors=[[1.0, 0.0], [float("nan"), 0.0], [1.0, 0.0]]), "vectors[1][0]", ratchetdb.InputError),
        (dict(ids=["a", "", "c"]), "ids[1]", ratchetdb.InputError),
        (dict(ids=["a", "b\x00", "c"]), "ids[1]", ratchetdb.InputError),
        (dict(sources=["s", "s", ""]), "sources[2]", ratchetdb.InputError),
        (dict(sources=""), "sources", ratchetdb.InputError),
        (dict(metas=[None, {"x": float("inf")}, None]), "metas[1]", ratchetdb.InputError),
        (dict(metas=[None, None]), "metas", ratchetdb.InputError),
        (dict(texts=["a", "b"]), "texts", ratchetdb.InputError),
        (dict(versions=[1, 2]), "versions", ratchetdb.InputError),
        (dict(versions=[1, -2, 3]), "versions[1]", ratchetdb.InputError),
    ],
)
def test_a_bad_item_refuses_the_whole_call_and_writes_nothing(store, change, field, kind):
    store.upsert("s", "seed", 1, ["seed"], [[0.0, 1.0]])
    args = dict(
        sources="s",
        ids=["a", "b", "c"],
        versions=1,
        texts=["a", "b", "c"],
        vectors=[[1.0, 0.0]] * 3,
    )
    args.update(change)
    with pytest.raises(kind) as error:
        store.add(**args)
    assert error.value.field == field
    assert len(store) == 1
    assert all(store.get("s", i) is None for i in "abc")


def test_an_item_the_stored_state_refuses_is_returned_in_place(store):
    store.upsert("s", "b", store.ticket(), ["b"], [[1.0, 0.0]])
    results = store.add("s", ["a", "b"], [1, 2], ["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    assert results[0].status == "written"
    assert isinstance(results[1], ratchetdb.VersionKindMismatchError)
    assert results[1].field == "versions[1]"
    assert len(store) == 2
