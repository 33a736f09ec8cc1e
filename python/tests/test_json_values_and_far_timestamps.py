"""Regressions from a review of the package:

- Metadata was checked for NaN only inside dicts, lists and tuples, while the conversion
  also takes sets, any Sequence or Mapping (UserList, deque, UserDict) and dataclasses: a NaN
  inside one became null unnoticed, a UserList holding itself overflowed the stack, and a
  set's order (its hash seed's) hashed the same metadata differently in another process.
  Anything but dict, list, tuple, str, int, float, bool and None is now an InputError naming
  the field, and nothing is written.
- A timestamp version past datetime's year 9999 (Node writes dates to the year 275760, the
  CLI any microseconds) raised OverflowError from get(), export() and a hit; it reads as its
  microseconds since 1970, an int.
- LangChain's add_texts of two texts under one id wrote the first and dropped the second,
  unnoticed; the last is written now (last write wins)."""

import collections
import dataclasses
import json
import subprocess

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

import ratchetdb
from conftest import ratchet_binary
from ratchetdb.langchain import RatchetVectorStore


@dataclasses.dataclass
class Point:
    x: float


def test_metadata_json_cannot_hold_is_refused_and_nothing_written(store):
    looped = collections.UserList()
    looped.append(looped)
    for meta in [
        {"tags": {"a", "b"}},
        {"x": frozenset([float("nan")])},
        {"u": collections.UserDict(a=float("nan"))},
        {"l": looped},
        {"d": collections.deque([1])},
        {"p": Point(1.0)},
        {"b": b"bytes"},
    ]:
        with pytest.raises(ratchetdb.InputError) as refused:
            store.upsert("s", "a", 1, texts=["t"], vectors=[[1.0, 0.0]], meta=meta)
        assert refused.value.field == "meta", meta
    assert store.get("s", "a") is None
    with pytest.raises(ratchetdb.InputError):
        store.search([1.0, 0.0], where={"tags": {"$in": {"a"}}})
    fine = {"n": 1, "f": 1.5, "s": "x", "b": True, "z": None, "l": [1, (2, 3)], "d": {"e": {}}}
    assert store.upsert("s", "a", 1, texts=["t"], vectors=[[1.0, 0.0]], meta=fine).status == "written"


def test_a_timestamp_past_year_9999_reads_as_its_microseconds(tmp_path):
    path = str(tmp_path / "far.redb")
    micros = 2**63
    line = {
        "op": "upsert", "source": "s", "id": "far", "version": micros,
        "version_kind": "timestamp_micros",
        "chunks": [{"text": "far future", "vector": [1.0, 0.0]}],
    }
    subprocess.run(
        [str(ratchet_binary()), "ingest", "--db", path, "--jsonl", "-"],
        input=json.dumps(line), text=True, check=True, capture_output=True,
    )
    with ratchetdb.Store(path) as store:
        assert store.get("s", "far")["version"] == micros
        assert [d["version"] for d in store.export()] == [micros]
        (hit,) = store.search([1.0, 0.0], k=1)
        assert hit.version == micros


def test_langchain_add_texts_writes_the_last_text_of_an_id(tmp_path):
    vs = RatchetVectorStore(tmp_path / "lc.redb", DeterministicFakeEmbedding(size=8))
    assert vs.add_texts(["first", "second"], ids=["x", "x"]) == ["x", "x"]
    (doc,) = vs.get_by_ids(["x"])
    assert doc.page_content == "second"
