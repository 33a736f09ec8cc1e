# Regression: `Store.search_many` read its argument twice (once to count the rows, once to
# convert them), so a generator or any other one-shot iterable of query vectors was used up by
# the first pass and the second found no rows.
"""`search_many` takes a generator or a one-shot iterator of query vectors, reads it once,
and answers as for the same rows in a list; a 2-D array is read as an array (never row by
row); a bad row is still an `InputError` naming `matrix[i]`."""

import numpy as np
import pytest

import ratchetdb

ROWS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.0, 0.8]]


class RowsNotIterable(np.ndarray):
    """A 2-D array that fails if read row by row (one Python object per row)."""

    def __iter__(self):
        raise AssertionError("the array was iterated row by row")


def answers(many):
    return [[(h.source, h.id, h.position, round(h.score, 5)) for h in hits] for hits in many]


@pytest.fixture
def store(path):
    with ratchetdb.Store(path) as s:
        s.upsert("s", "x", 1, ["x"], [[1.0, 0.0, 0.0]])
        s.upsert("s", "y", 1, ["y"], [[0.0, 1.0, 0.0]])
        s.upsert("s", "z", 1, ["z"], [[0.0, 0.0, 1.0]])
        yield s


def test_search_many_reads_a_generator_once(store):
    expected = answers(store.search_many(ROWS, k=2, exact=True))
    assert [hits[0][1] for hits in expected] == ["x", "y", "z"]

    consumed = []

    def generated():
        for row in ROWS:
            consumed.append(row)
            yield np.asarray(row, dtype=np.float32)

    assert answers(store.search_many(generated(), k=2, exact=True)) == expected
    assert consumed == ROWS  # one pass over the generator

    one_shot = iter([list(row) for row in ROWS])
    assert answers(store.search_many(one_shot, k=2, exact=True)) == expected
    assert next(one_shot, None) is None
    assert answers(store.search_many(map(tuple, ROWS), k=2, exact=True)) == expected

    # A 2-D array is read as an array, float32 in place or another real dtype converted.
    for dtype in (np.float32, np.float64):
        matrix = np.asarray(ROWS, dtype=dtype).view(RowsNotIterable)
        assert answers(store.search_many(matrix, k=2, exact=True)) == expected


def test_a_bad_row_of_a_generator_names_its_place(store):
    for bad, field in [(None, "matrix[1]"), ("abc", "matrix[1]"), ([1.0, "x", 0.0], "matrix[1][1]")]:
        rows = (row for row in [ROWS[0], bad, ROWS[2]])
        with pytest.raises(ratchetdb.InputError) as raised:
            store.search_many(rows, k=1)
        assert raised.value.field == field
    with pytest.raises(ratchetdb.InputError) as raised:
        store.search_many((row for row in [ROWS[0], [1.0, 0.0]]), k=1)
    assert raised.value.field == "matrix[1]"
