"""The core API round trip: upsert from numpy, search (filters, sources, exact, ef),
search_many, get, export, stats, verify, plan."""

import numpy as np
import pytest

import ratchetdb


def test_upsert_then_search_returns_hits_with_every_field(store):
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    out = store.upsert(
        "wiki",
        "a.md",
        3,
        ["cats purr", "dogs bark", "fish swim"],
        vectors,
        metas=[{"animal": "cat"}, {"animal": "dog"}, None],
        meta={"lang": "en"},
    )
    assert out.status == "written" and out.reason is None
    assert (out.chunks_written, out.chunks_reused, out.chunks_removed) == (3, 0, 0)
    assert out.incoming_version == 3 and out.stored_version == 3
    hits = store.search(np.array([0.9, 0.2, 0], dtype=np.float32), k=2)
    assert [h.text for h in hits] == ["cats purr", "dogs bark"]
    top = hits[0]
    assert (top.source, top.id, top.position, top.version) == ("wiki", "a.md", 0, 3)
    assert top.meta == {"animal": "cat"}
    assert hits[0].score > hits[1].score
    assert store.dimension == 3 and store.metric == "cosine"


def test_search_where_sources_exact_ef(store):
    rng = np.random.default_rng(7)
    for i in range(50):
        store.upsert(
            "a" if i % 2 else "b",
            f"d{i}",
            1,
            [f"t{i}"],
            rng.standard_normal((1, 8)).astype(np.float32),
            metas=[{"n": i, "even": i % 2 == 0}],
        )
    q = rng.standard_normal(8).astype(np.float32)
    hits = store.search(q, k=50, where={"n": {"$gte": 40}})
    assert sorted(h.meta["n"] for h in hits) == list(range(40, 50))
    assert all(h.source == "a" for h in store.search(q, k=50, sources=["a"]))
    assert all(h.source == "b" for h in store.search(q, k=50, sources="b"))
    exact = store.search(q, k=5, exact=True)
    assert [h.id for h in store.search(q, k=5, ef=200)] == [h.id for h in exact]
    odd_not = store.search(q, k=50, where={"$not": {"even": True}})
    assert len(odd_not) == 25 and all(not h.meta["even"] for h in odd_not)
    # float64 and lists are converted
    assert [h.id for h in store.search(q.astype(np.float64), k=3, exact=True)] == [
        h.id for h in exact[:3]
    ]
    assert [h.id for h in store.search(q.tolist(), k=3, exact=True)] == [
        h.id for h in exact[:3]
    ]
    many = store.search_many(np.stack([q, -q]), k=3, exact=True)
    assert [h.id for h in many[0]] == [h.id for h in exact[:3]]
    assert len(many[1]) == 3


def test_get_export_stats_verify_plan(store):
    store.upsert("s", "x", 1, ["alpha", "beta"], np.eye(2, dtype=np.float32), meta={"k": 1})
    store.upsert("s", "y", 1, ["gamma"], np.array([[1, 1]], dtype=np.float32))
    store.delete("s", "y", 2)
    doc = store.get("s", "x", vectors=True)
    assert doc["version"] == 1 and not doc["deleted"] and doc["meta"] == {"k": 1}
    assert [c["text"] for c in doc["chunks"]] == ["alpha", "beta"]
    assert np.allclose(doc["chunks"][1]["vector"], [0, 1])
    assert store.get("s", "y")["deleted"] and store.get("s", "nope") is None
    exported = list(store.export())
    assert [(d["id"], d["deleted"]) for d in exported] == [("x", False), ("y", True)]
    stats = store.stats()
    assert (stats["documents"], stats["tombstones"], stats["chunks"]) == (1, 1, 2)
    report = store.verify()
    assert report.ok and report.documents == 1 and report.violations == []
    plan = store.plan("s", "x", 2, ["alpha", "delta"])
    assert plan == {"action": "write", "reusable": [0], "to_embed": [1]}
    assert store.plan("s", "x", 1, ["alpha", "beta"], meta={"k": 1})["action"] == "skip"
    # A chunk sent without a vector reuses the stored one for its text.
    out = store.upsert("s", "x", 2, ["alpha", "delta"], [None, [0.5, 0.5]], meta={"k": 1})
    assert (out.chunks_reused, out.chunks_written) == (1, 1)


def test_context_manager_closes_and_a_closed_store_raises(path):
    with ratchetdb.Store(path, dimension=2) as s:
        s.upsert("s", "a", 1, ["t"], [[1.0, 0.0]])
    assert s.closed
    with pytest.raises(ratchetdb.ClosedError):
        s.search([1.0, 0.0])
    with ratchetdb.Store(path) as again:
        assert again.dimension == 2 and again.get("s", "a") is not None
