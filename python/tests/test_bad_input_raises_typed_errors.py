"""Bad input raises a typed exception naming the field and changes nothing; a second
writer gets StoreLockedError; nothing crashes the interpreter."""

import numpy as np
import pytest

import ratchetdb


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(version=-1), "version"),
        (dict(version="3"), "version"),
        (dict(texts="not a list"), "texts"),
        (dict(texts=["a", 1]), "texts[1]"),
        (dict(vectors=np.zeros((2, 3), dtype=np.float32)), "vectors"),
        (dict(texts=["a", "b"], vectors=[[1.0, 0.0, 0.0], "x"]), "vectors[1]"),
        (dict(vectors=[[1.0, 0.0]]), "vectors[0]"),
        (dict(metas=[{"a": 1}, {}]), "metas"),
        (dict(metas=[{"a": object()}]), "metas[0]"),
        (dict(id=""), "id"),
        (dict(vectors=[[float("nan"), 0.0, 0.0]]), "vectors[0][0]"),
    ],
)
def test_invalid_upsert_names_the_field_and_writes_nothing(store, kwargs, field):
    store.upsert("s", "seed", 1, ["seed"], [[1.0, 0.0, 0.0]])
    before = store.stats()
    args = dict(
        source="s", id="d", version=1, texts=["a"], vectors=[[1.0, 0.0, 0.0]]
    )
    args.update(kwargs)
    with pytest.raises(ratchetdb.InputError) as error:
        store.upsert(**args)
    assert error.value.field == field
    after = store.stats()
    assert (after["documents"], after["chunks"]) == (before["documents"], before["chunks"])
    assert store.verify().ok


def test_bad_search_arguments(store):
    store.upsert("s", "d", 1, ["a"], [[1.0, 0.0]])
    with pytest.raises(ratchetdb.InputError) as error:
        store.search([1.0, 0.0], where={"year": {"$gte": [1]}})
    assert error.value.field == "where.year.$gte"
    with pytest.raises(ratchetdb.InputError) as error:
        store.search([1.0, 0.0, 0.0])
    assert error.value.field == "vector"
    with pytest.raises(ratchetdb.InputError) as error:
        store.search([1.0, 0.0], k=10**9)
    assert error.value.field == "k"
    with pytest.raises(ratchetdb.InputError) as error:
        store.search([1.0, 0.0], sources=[3])
    assert error.value.field == "sources[0]"
    with pytest.raises(ratchetdb.InputError):
        ratchetdb.Store(str(store.path) + "2", metric="manhattan")


def test_a_second_writer_is_refused_with_store_locked(store, path):
    with pytest.raises(ratchetdb.StoreLockedError):
        ratchetdb.Store(path)
    with pytest.raises(ratchetdb.RatchetError):
        ratchetdb.Store(path)


def test_a_file_that_is_not_a_store_raises_store_open_error(tmp_path):
    junk = tmp_path / "junk.redb"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ratchetdb.RatchetError):
        ratchetdb.Store(str(junk))


def test_write_batch_returns_input_errors_in_place(store):
    results = store.write_batch(
        [
            {"op": "upsert", "source": "s", "id": "a", "version": 1, "texts": ["x"], "vectors": [[1.0, 0.0]]},
            {"op": "upsert", "source": "s", "id": "b", "version": 1, "texts": ["y"], "vectors": [[1.0, 0.0, 0.0]]},
            {"op": "delete", "source": "s", "id": "c", "version": 1},
            {"op": "retain", "source": "s", "ids": ["a"], "version": 2},
        ]
    )
    assert results[0].status == "written"
    assert isinstance(results[1], ratchetdb.DimensionMismatchError)
    assert results[2].status == "deleted"
    assert isinstance(results[3], ratchetdb.RetainOutcome)
    assert store.get("s", "b") is None
    with pytest.raises(ratchetdb.InputError) as error:
        store.write_batch([{"op": "rename", "source": "s", "version": 1}])
    assert error.value.field == "ops[0].op"
    with pytest.raises(ratchetdb.InputError) as error:
        store.write_batch([{"op": "upsert", "source": "s", "id": "q", "version": 1, "texts": ["a"], "vectors": [[1.0, 0.0]], "metas": [1, 2]}])
    assert error.value.field == "ops[0].metas"


def test_counts_and_array_shapes_are_input_errors(store, tmp_path):
    store.upsert("s", "d", 1, ["a"], [[1.0, 0.0]])
    for kwargs, field in [(dict(k=0), "k"), (dict(k=-3), "k"), (dict(ef=-1), "ef")]:
        with pytest.raises(ratchetdb.InputError) as error:
            store.search([1.0, 0.0], **kwargs)
        assert error.value.field == field
    with pytest.raises(ratchetdb.InputError) as error:
        store.search(np.zeros((2, 2)))
    assert error.value.field == "vector"
    with pytest.raises(ratchetdb.InputError) as error:
        store.upsert("s", "e", 1, ["a"], np.zeros(2))
    assert error.value.field == "vectors"
    with pytest.raises(ratchetdb.InputError) as error:
        store.search_many(np.zeros(2))
    assert error.value.field.startswith("matrix")
    with pytest.raises(ratchetdb.InputError) as error:
        ratchetdb.Store(str(tmp_path / "neg.redb"), dimension=-1)
    assert error.value.field == "dimension"
    with pytest.raises(ratchetdb.InputError) as error:
        store.upsert("s", "e", 1, ["a"], [[1.0, 0.0]], metas=[{"x": float("nan")}])
    assert error.value.field == "metas[0]"
    assert store.get("s", "e") is None


def test_metadata_json_cannot_hold_is_refused_not_changed(store):
    store.upsert("s", "d", 1, ["a"], [[1.0, 0.0]])
    deep = {}
    for _ in range(100_000):
        deep = {"x": deep}
    for meta in ({"x": float("nan")}, {"x": [1.0, float("inf")]}, deep):
        with pytest.raises(ratchetdb.InputError) as error:
            store.upsert("s", "e", 1, ["a"], [[1.0, 0.0]], metas=[meta])
        assert error.value.field == "metas[0]"
    with pytest.raises(ratchetdb.InputError) as error:
        store.search([1.0, 0.0], where=deep)
    assert error.value.field == "where"
    assert store.get("s", "e") is None
