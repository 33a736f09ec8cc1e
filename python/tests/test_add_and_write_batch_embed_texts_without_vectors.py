"""Issue 46 (embedders in the bindings): `add` without vectors and `write_batch` upserts
without "vectors" are embedded by the Store's embedder, like `upsert`; operations that
carry vectors keep theirs."""

import numpy as np

import ratchetdb


def test_add_and_write_batch_without_vectors(tmp_path):
    embedder = ratchetdb.HashingEmbedder(32)
    with ratchetdb.Store(tmp_path / "s.redb", embedder=embedder) as store:
        results = store.add("kb", ["x", "y"], 1, ["red apples", "blue whales"])
        assert [r.status for r in results] == ["written", "written"]
        own = np.zeros(32, dtype=np.float32)
        own[5] = 1.0
        results = store.write_batch(
            [
                {"op": "upsert", "source": "kb", "id": "z", "version": 1,
                 "texts": ["green frogs"]},
                {"op": "upsert", "source": "kb", "id": "w", "version": 1,
                 "texts": ["my own vector"], "vectors": [own]},
                {"op": "delete", "source": "kb", "id": "x", "version": 2},
            ]
        )
        assert [r.status for r in results] == ["written", "written", "deleted"]
        assert store.search_query("whales", k=1)[0].id == "y"
        assert store.search_query("frogs", k=1)[0].id == "z"
        for id_, text in [("y", "blue whales"), ("z", "green frogs")]:
            vector = store.get("kb", id_, vectors=True)["chunks"][0]["vector"]
            np.testing.assert_allclose(vector, embedder.embed([text])[0], rtol=0, atol=1e-6)
        kept = store.get("kb", "w", vectors=True)["chunks"][0]["vector"]
        np.testing.assert_array_equal(kept, own)
        assert len(store) == 3 and store.verify().ok
