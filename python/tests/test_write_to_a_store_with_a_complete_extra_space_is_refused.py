"""Regression (review of issue 46): a store given a second, complete vector space by `ratchet
reembed` needs that space's vector with every new chunk, which this package cannot give; the
refusal was a bare RatchetError quoting the Rust API (`Chunk::with_space_vector`). It is an
InputError naming `vectors[i]` in this package's words, and nothing is written."""

import subprocess

import numpy as np
import pytest

import ratchetdb
from conftest import ratchet_binary


def test_write_to_a_store_with_a_complete_extra_space(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("The ratchet turns one way only.", encoding="utf-8")
    db = tmp_path / "spaces.redb"
    binary = str(ratchet_binary())
    for args in (["ingest", "--db", str(db), str(folder)],
                 ["reembed", "--db", str(db), "--hashing", "16"]):
        run = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr

    def documents():
        with ratchetdb.Store(db, read_only=True) as store:
            return [(d["source"], d["id"], d["version"]) for d in store.export()]

    before = documents()
    with ratchetdb.Store(db) as store:
        with pytest.raises(ratchetdb.InputError) as raised:
            store.upsert("s", "new", 1, ["a new text"], np.ones((1, 384), dtype=np.float32))
    assert raised.value.field == "vectors[0]"
    message = str(raised.value)
    assert "complete vector space" in message and "::" not in message
    assert documents() == before
