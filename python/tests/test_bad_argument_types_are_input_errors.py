# Issue 44 item 8: bad input escaped the typed errors: search(v, k=10**20) raised
# OverflowError, k=1.5 TypeError, a lone surrogate in search_text UnicodeEncodeError;
# search(b"abcd") was read as the vector [97, 98, 99, 100] and a complex64 array was stored
# with its imaginary part dropped. Every argument of every method is an InputError naming
# the field, and nothing is changed.
"""Every bad argument of every method is an InputError naming the field; nothing is written."""

import datetime

import numpy as np
import pytest

import ratchetdb

SURROGATE = "bad \ud800 text"
V = [1.0, 0.0]


@pytest.fixture
def seeded(store):
    store.upsert("s", "a", 1, ["alpha"], [V])
    return store


def calls(store):
    """(call, field) pairs: each call must raise an InputError naming field."""
    up = dict(source="s", id="d", version=1, texts=["t"], vectors=[V])

    def upsert(**kwargs):
        return lambda: store.upsert(**{**up, **kwargs})

    def add(**kwargs):
        args = dict(sources="s", ids=["x", "y"], versions=1, texts=["x", "y"], vectors=[V, V])
        args.update(kwargs)
        return lambda: store.add(**args)

    return [
        # Counts: k, ef, rrf_k, dimension.
        (lambda: store.search(V, k=10**20), "k"),
        (lambda: store.search(V, k=1.5), "k"),
        (lambda: store.search(V, k="3"), "k"),
        (lambda: store.search(V, k=True), "k"),
        (lambda: store.search(V, ef=2**70), "ef"),
        (lambda: store.search(V, ef=2.0), "ef"),
        (lambda: store.search_many(np.array([V]), k=-(10**30)), "k"),
        (lambda: store.search_text("alpha", k=1.5), "k"),
        (lambda: store.search_hybrid("alpha", V, k=10**20), "k"),
        (lambda: store.search_hybrid("alpha", V, rrf_k=1.5), "rrf_k"),
        (lambda: store.search_hybrid("alpha", V, rrf_k=2**40), "rrf_k"),
        (lambda: store.search_hybrid("alpha", V, vector_weight="half"), "vector_weight"),
        (lambda: store.search_text("alpha", k1="x"), "k1"),
        (lambda: store.search_text("alpha", b=float("nan")), "b"),
        (lambda: store.search(V, exact="yes"), "exact"),
        (lambda: store.get("s", "a", vectors=1), "vectors"),
        (lambda: store.export(vectors="no"), "vectors"),
        (lambda: store.wait_for_index(timeout="soon"), "timeout"),
        # Strings: lone surrogates and other types.
        (lambda: store.search_text(SURROGATE), "query"),
        (lambda: store.search_text(b"alpha"), "query"),
        (lambda: store.search_hybrid(SURROGATE, V), "text"),
        (lambda: store.search(V, sources=SURROGATE), "sources"),
        (lambda: store.search(V, sources=["s", SURROGATE]), "sources[1]"),
        (lambda: store.get(SURROGATE, "a"), "source"),
        (lambda: store.get("s", 3), "id"),
        (lambda: store.delete("s", SURROGATE, 2), "id"),
        (lambda: store.retain("s", ["a", SURROGATE], 2), "ids[1]"),
        (lambda: store.retain(SURROGATE, ["a"], 2), "source"),
        (lambda: store.plan("s", "a", 2, [SURROGATE]), "texts[0]"),
        (upsert(source=SURROGATE), "source"),
        (upsert(id=SURROGATE), "id"),
        (upsert(id=None), "id"),
        (upsert(texts=[SURROGATE]), "texts[0]"),
        (upsert(texts=b"t"), "texts"),
        (upsert(metas=[{"k": SURROGATE}]), "metas[0]"),
        (upsert(meta={SURROGATE: 1}), "meta"),
        (lambda: store.search(V, where={"k": SURROGATE}), "where"),
        (lambda: store.write_batch([{"op": "delete", "source": "s", "id": SURROGATE, "version": 2}]), "ops[0].id"),
        # Versions.
        (upsert(version=1.0), "version"),
        (upsert(version=2**64), "version"),
        (upsert(version=True), "version"),
        (upsert(version=datetime.datetime(2024, 1, 1)), "version"),
        # Vectors: bytes, str, complex, bool, non-numbers.
        (lambda: store.search(b"ab"), "vector"),
        (lambda: store.search("ab"), "vector"),
        (lambda: store.search(np.array([1 + 2j, 0], dtype=np.complex64)), "vector"),
        (lambda: store.search(np.array([True, False])), "vector"),
        (lambda: store.search([1.0, 2j]), "vector[1]"),
        (lambda: store.search([True, False]), "vector[0]"),
        (lambda: store.search([1.0, np.complex64(1j)]), "vector[1]"),
        (lambda: store.search([1.0, 10**400]), "vector[1]"),
        (lambda: store.search(np.array([1.0, "x"], dtype=object)), "vector[1]"),
        (lambda: store.search_hybrid("alpha", b"ab"), "vector"),
        (lambda: store.search_many(b"abab"), "matrix"),
        (lambda: store.search_many([b"ab"]), "matrix[0]"),
        (lambda: store.search_many(np.array([[1 + 1j, 0]])), "matrix"),
        (upsert(vectors=np.array([[1 + 2j, 0]], dtype=np.complex64)), "vectors"),
        (upsert(vectors=[np.array([1 + 2j, 0])]), "vectors[0]"),
        (upsert(vectors=[b"ab"]), "vectors[0]"),
        (upsert(vectors=b"ab"), "vectors"),
        (upsert(vectors=np.array([["1", "0"]])), "vectors"),
        (upsert(vectors=np.array([[True, False]])), "vectors"),
        (upsert(vectors=[[1.0, "0"]]), "vectors[0][1]"),
        # add: the whole call, naming the item.
        (add(vectors=[V, b"ab"]), "vectors[1]"),
        (add(ids=["x", SURROGATE]), "ids[1]"),
        (add(versions=[1, 2.5]), "versions[1]"),
        (add(sources=["s", 7]), "sources[1]"),
        # Opening.
        (lambda: ratchetdb.Store(str(store.path) + ".2", dimension=2**70), "dimension"),
        (lambda: ratchetdb.Store(str(store.path) + ".2", dimension=3.0), "dimension"),
        (lambda: ratchetdb.Store(str(store.path) + ".2", metric=1), "metric"),
        (lambda: ratchetdb.Store(str(store.path) + ".2", durability=SURROGATE), "durability"),
        (lambda: ratchetdb.Store(str(store.path) + ".2", read_only="no"), "read_only"),
        (lambda: ratchetdb.Store(3.5), "path"),
        (lambda: ratchetdb.Ticket(-1), "value"),
        (lambda: ratchetdb.Ticket(2**64), "value"),
    ]


def test_every_bad_argument_is_an_input_error_naming_its_field(seeded):
    before = (seeded.stats()["documents"], seeded.stats()["chunks"], seeded.stats()["tombstones"])
    wrong = []
    for i, (call, field) in enumerate(calls(seeded)):
        try:
            call()
        except ratchetdb.InputError as error:
            if error.field != field or field not in str(error):
                wrong.append((i, field, error.field, str(error)))
            continue
        except BaseException as error:  # noqa: BLE001 - every escape is reported
            wrong.append((i, field, type(error).__name__, str(error)))
            continue
        wrong.append((i, field, "no error", ""))
    assert wrong == []
    stats = seeded.stats()
    assert (stats["documents"], stats["chunks"], stats["tombstones"]) == before
    assert seeded.verify().ok


def test_numpy_integers_and_real_arrays_are_still_accepted(seeded):
    assert seeded.upsert("s", "n", np.int64(3), ["n"], np.array([[1, 0]], dtype=np.int32)).status == "written"
    assert seeded.get("s", "n")["version"] == 3
    hits = seeded.search(np.array([1.0, 0.0], dtype=np.float64), k=np.int64(2), ef=np.uint16(8))
    assert {h.id for h in hits} == {"a", "n"}
    assert [h.id for h in seeded.search([np.float32(0.0), 1], k=1, exact=np.bool_(True))]
