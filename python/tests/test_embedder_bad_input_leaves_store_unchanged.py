"""Issue 46 (embedders in the bindings): bad input around embedders raises a typed error
naming the field (no embedder for a call that needs one, an embedder of another model or
dimension than the store's, a store holding vectors of an unrecorded model, wrong types),
and the store is left unchanged."""

import numpy as np
import pytest

import ratchetdb


def snapshot(path):
    with ratchetdb.Store(path, read_only=True) as store:
        return (store.model, store.dimension, [
            (d["source"], d["id"], d["version"], [c["text"] for c in d["chunks"]])
            for d in store.export()
        ])


def test_no_embedder(tmp_path):
    path = tmp_path / "plain.redb"
    with ratchetdb.Store(path) as store:
        store.upsert("s", "a", 1, ["kept"], np.ones((1, 4), dtype=np.float32))
        # Without an embedder, no vectors means "reuse the stored vector of the same text":
        # a text the store holds no vector for is refused.
        with pytest.raises(ratchetdb.MissingVectorError) as raised:
            store.upsert("s", "b", 1, ["new"])
        assert raised.value.field == "vectors[0]" and "embedder" in str(raised.value)
        [refused] = store.add("s", ["b"], 1, ["new"])
        assert isinstance(refused, ratchetdb.MissingVectorError) and "embedder" in str(refused)
        [refused] = store.write_batch([{"op": "upsert", "source": "s", "id": "b",
                                        "version": 1, "texts": ["new"]}])
        assert isinstance(refused, ratchetdb.MissingVectorError)
        calls = [
            (lambda: store.search_query("kept"), "embedder"),
            (lambda: store.search_hybrid("kept"), "vector"),
        ]
        for call, field in calls:
            with pytest.raises(ratchetdb.InputError) as raised:
                call()
            assert raised.value.field == field
            assert "embedder" in str(raised.value)
    assert snapshot(path) == (None, 4, [("s", "a", 1, ["kept"])])
    # ... and a text it holds a vector for is accepted, reusing it (as before embedders): the
    # same content at a newer version.
    with ratchetdb.Store(path) as store:
        assert store.upsert("s", "a", 2, ["kept"], None).status == "unchanged"
    assert snapshot(path) == (None, 4, [("s", "a", 2, ["kept"])])


def test_embedder_of_another_model_or_dimension(tmp_path):
    path = tmp_path / "hashed.redb"
    with ratchetdb.Store(path, embedder=ratchetdb.HashingEmbedder(16)) as store:
        store.upsert("s", "a", 1, ["kept"])
    before = snapshot(path)
    assert before[:2] == ("hash-lexical-v1-16", 16)

    with pytest.raises(ratchetdb.MismatchError) as raised:
        ratchetdb.Store(path, embedder=ratchetdb.HashingEmbedder(32))
    assert raised.value.field == "model" and "hash-lexical-v1-16" in str(raised.value)
    with pytest.raises(ratchetdb.MismatchError) as raised:
        ratchetdb.Store(path, read_only=True, embedder=ratchetdb.HashingEmbedder(32))
    assert raised.value.field == "model"
    with pytest.raises(ratchetdb.InputError) as raised:
        ratchetdb.Store(path, dimension=8, embedder=ratchetdb.HashingEmbedder(16))
    assert raised.value.field == "dimension"
    assert snapshot(path) == before

    # A store of vectors from an unrecorded model takes no embedder.
    own = tmp_path / "own.redb"
    with ratchetdb.Store(own) as store:
        store.upsert("s", "a", 1, ["mine"], np.ones((1, 16), dtype=np.float32))
    with pytest.raises(ratchetdb.MismatchError) as raised:
        ratchetdb.Store(own, embedder=ratchetdb.HashingEmbedder(16))
    assert raised.value.field == "model" and "unrecorded" in str(raised.value)
    assert snapshot(own) == (None, 16, [("s", "a", 1, ["mine"])])


def test_wrong_types(tmp_path):
    cases = [
        (lambda: ratchetdb.Store(tmp_path / "x.redb", embedder="minilm"), "embedder"),
        (lambda: ratchetdb.HashingEmbedder(0), "dimension"),
        (lambda: ratchetdb.HashingEmbedder("8"), "dimension"),
        (lambda: ratchetdb.HashingEmbedder(8).embed("one text"), "texts"),
        (lambda: ratchetdb.HashingEmbedder(8).embed(["ok", 3]), "texts[1]"),
    ]
    for call, field in cases:
        with pytest.raises(ratchetdb.InputError) as raised:
            call()
        assert raised.value.field == field
    assert not (tmp_path / "x.redb").exists()
    with pytest.raises(TypeError):
        ratchetdb.Embedder()

    path = tmp_path / "e.redb"
    with ratchetdb.Store(path, embedder=ratchetdb.HashingEmbedder(8)) as store:
        store.upsert("s", "a", 1, ["kept"])
        with pytest.raises(ratchetdb.InputError) as raised:
            store.upsert("s", "b", 1, ["fine", 7])
        assert raised.value.field == "texts[1]"
        with pytest.raises(ratchetdb.InputError) as raised:
            store.search_query(["not", "a", "str"])
        assert raised.value.field == "query"
        with pytest.raises(ratchetdb.DimensionMismatchError):
            store.upsert("s", "b", 1, ["wrong width"], np.ones((1, 3), dtype=np.float32))
    assert snapshot(path) == ("hash-lexical-v1-8", 8, [("s", "a", 1, ["kept"])])
