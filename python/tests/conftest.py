import numpy as np
import pytest

import ratchetdb


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "store.redb")


@pytest.fixture
def store(path):
    with ratchetdb.Store(path) as s:
        yield s


def unit(*xs):
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)
