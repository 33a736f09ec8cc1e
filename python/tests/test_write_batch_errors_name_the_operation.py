# Regression: an input error of one operation of `Store.write_batch(ops)` named the field
# without the operation's place: the store's refusal of the third op's vector came back as
# `vectors[0][1]` (Rust's `chunks[0].vector[1]`) and a version kind mismatch as `version`,
# where they are `ops[2].vectors[0][1]` and `ops[2].version`.
"""Every input error of an operation of `write_batch` names the operation's place
(`.field` starts with `ops[2].`), whether the binding refuses it while converting the batch
(raised: nothing of the batch is written) or the store refuses that operation (returned in
its place, as `write_batch` documents: the refused operation writes nothing, and the
others are applied)."""

import datetime

import pytest

import ratchetdb

UTC = datetime.timezone.utc


def nested(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


def third(**changes):
    op = {"op": "upsert", "source": "s", "id": "c", "version": 1, "texts": ["c"],
          "vectors": [[1.0, 0.0, 0.0]]}
    op.update(changes)
    return op


# The third operation, the error it gets, and whether it is raised (the binding refuses
# the batch while converting it) or returned in its place (the store refuses that op).
CASES = {
    "NaN in a vector": (third(vectors=[[1.0, float("nan"), 0.0]]),
                        ratchetdb.InputError, "ops[2].vectors[0][1]", False),
    "NaN in a space vector": (third(space_vectors={"extra": [[float("nan"), 1.0]]}),
                              ratchetdb.InputError, 'ops[2].space_vectors["extra"][0][0]', False),
    "wrong dimension": (third(vectors=[[1.0, 0.0]]),
                        ratchetdb.DimensionMismatchError, "ops[2].vectors[0]", False),
    "no vector, none stored": (third(vectors=None), ratchetdb.MissingVectorError,
                               "ops[2].vectors[0]", False),
    "metadata JSON cannot hold": (third(metas=[{"tags": {"a", "b"}}]),
                                  ratchetdb.InputError, "ops[2].metas[0]", True),
    "metadata nested too deep": (third(metas=[nested(100)]),
                                 ratchetdb.InputError, "ops[2].metas[0]", False),
    "document metadata JSON cannot hold": (third(meta={"x": float("inf")}),
                                           ratchetdb.InputError, "ops[2].meta", True),
    "version of no kind": (third(version="5"), ratchetdb.InputError, "ops[2].version", True),
    "version of another kind": (third(id="dated", version=7),
                                ratchetdb.VersionKindMismatchError, "ops[2].version", False),
    "delete of a bad id": ({"op": "delete", "source": "s", "id": "", "version": 1},
                           ratchetdb.InputError, "ops[2].id", False),
    "retain of a bad id": ({"op": "retain", "source": "s", "ids": ["ok", "no\0pe"], "version": 9},
                           ratchetdb.InputError, "ops[2].ids[1]", False),
}


def contents(store):
    return sorted((d["source"], d["id"], d["version"], d["deleted"]) for d in store.export())


@pytest.mark.parametrize("case", list(CASES))
def test_write_batch_errors_name_the_operation(path, case):
    op, kind, field, raised = CASES[case]
    with ratchetdb.Store(path) as store:
        store.upsert("s", "dated", datetime.datetime(2024, 1, 1, tzinfo=UTC), ["d"],
                     [[0.0, 1.0, 0.0]])
        before = contents(store)
        ops = [
            {"op": "upsert", "source": "s", "id": "a", "version": 1, "texts": ["a"],
             "vectors": [[1.0, 0.0, 0.0]]},
            {"op": "delete", "source": "s", "id": "b", "version": 1},
            op,
        ]
        if raised:
            with pytest.raises(kind) as error:
                store.write_batch(ops)
            refusal = error.value
            # Nothing of the batch was written: not the earlier operations either.
            assert contents(store) == before
            assert store.get("s", "a") is None and store.get("s", "b") is None
        else:
            results = store.write_batch(ops)
            refusal = results[2]
            assert isinstance(refusal, kind), refusal
            # The refused operation wrote nothing; the others were applied.
            assert [r.status for r in results[:2]] == ["written", "deleted"]
            assert contents(store) == sorted(before + [("s", "a", 1, False), ("s", "b", 1, True)])
            assert store.get("s", "c") is None
        assert refusal.field == field
        assert str(refusal).startswith(f"invalid {field}: ")
        assert refusal.problem and refusal.problem in str(refusal)
        assert store.verify().ok


def test_write_batch_errors_name_the_operation_when_the_store_embeds(path):
    # Texts without vectors are embedded before the batch is written; the store's refusal of
    # the third operation still names its place.
    with ratchetdb.Store(path, embedder=ratchetdb.HashingEmbedder(8)) as store:
        results = store.write_batch([
            {"op": "upsert", "source": "s", "id": "a", "version": 1, "texts": ["a"]},
            {"op": "upsert", "source": "s", "id": "b", "version": 1, "texts": ["b"]},
            {"op": "upsert", "source": "s", "id": "", "version": 1, "texts": ["c"]},
            {"op": "upsert", "source": "s", "id": "d", "version": 1, "texts": ["d"],
             "vectors": [[1.0] * 7]},
        ])
        assert [r.status for r in results[:2]] == ["written", "written"]
        assert isinstance(results[2], ratchetdb.InputError)
        assert results[2].field == "ops[2].id"
        assert isinstance(results[3], ratchetdb.DimensionMismatchError)
        assert results[3].field == "ops[3].vectors[0]"
        assert sorted(d["id"] for d in store.export()) == ["a", "b"]
