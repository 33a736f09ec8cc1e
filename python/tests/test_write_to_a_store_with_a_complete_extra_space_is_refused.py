"""Regression (review of issue 46): a store given a second, complete vector space by `ratchet
reembed` needs that space's vector with every new chunk, which this package could not give:
every write was refused. A write now carries them (`space_vectors=` of `upsert`, `add` and
`write_batch`), or a Store opened with an embedder of that space's model embeds them; a write
that still lacks one is refused with an InputError naming `space_vectors["NAME"][i]` in this
package's words (no Rust API quoted), and nothing is written."""

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
                 ["reembed", "--db", str(db), "--hashing", "16", "--space", "small"]):
        run = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
    big, small = ratchetdb.HashingEmbedder(384), ratchetdb.HashingEmbedder(16)

    def documents():
        with ratchetdb.Store(db, read_only=True) as store:
            return [(d["source"], d["id"], d["version"]) for d in store.export()]

    def refused(raised, row=0):
        assert raised.value.field == f'space_vectors["small"][{row}]'
        message = str(raised.value)
        assert "complete vector space" in message and "::" not in message

    def nearest_in_small(store, text):
        hit = store.search(small.embed([text])[0], k=1, exact=True, space="small")[0]
        return hit.text, hit.score

    before = documents()
    # Without the space's vector: refused, with and without the default space's embedder.
    with ratchetdb.Store(db) as store:
        with pytest.raises(ratchetdb.InputError) as raised:
            store.upsert("s", "new", 1, ["a new text"], big.embed(["a new text"]))
        refused(raised)
        results = store.add("s", ["x", "y"], 1, ["text x", "text y"], big.embed(["text x", "text y"]))
        assert all(isinstance(r, ratchetdb.InputError) for r in results)
        assert results[1].field == 'space_vectors["small"][1]'
    with ratchetdb.Store(db, embedder=big) as store:
        with pytest.raises(ratchetdb.InputError) as raised:
            store.upsert("s", "new", 1, ["a new text"])
        refused(raised)
    assert documents() == before

    # A vector of another width than the space's is refused naming it, nothing written.
    with ratchetdb.Store(db) as store:
        with pytest.raises(ratchetdb.InputError) as raised:
            store.upsert("s", "new", 1, ["a new text"], big.embed(["a new text"]),
                         space_vectors={"small": big.embed(["a new text"])})
        assert raised.value.field.startswith('space_vectors["small"][0]')
    assert documents() == before

    # Given, in each write shape: written, and found in that space.
    with ratchetdb.Store(db) as store:
        texts = ["an upserted text", "another upserted text"]
        out = store.upsert("s", "up", 1, texts, big.embed(texts),
                           space_vectors={"small": small.embed(texts)})
        assert out.status == "written"
        added = store.add("s", ["a1", "a2"], 1, ["added one", "added two"],
                          big.embed(["added one", "added two"]),
                          space_vectors={"small": small.embed(["added one", "added two"])})
        assert [r.status for r in added] == ["written", "written"]
        [batched] = store.write_batch([{
            "op": "upsert", "source": "s", "id": "b", "version": 1, "texts": ["batched"],
            "vectors": big.embed(["batched"]), "space_vectors": {"small": small.embed(["batched"])},
        }])
        assert batched.status == "written"
        for text in texts + ["added two", "batched"]:
            found, score = nearest_in_small(store, text)
            assert found == text and score == pytest.approx(1.0, abs=1e-5)
        assert store.verify().ok
        # Read back with its vectors: each chunk's space vectors, in upsert's shape.
        chunks = store.get("s", "up", vectors=True)["chunks"]
        rows = np.stack([c["space_vectors"]["small"] for c in chunks])
        np.testing.assert_allclose(rows, small.embed(texts), rtol=0, atol=1e-6)
        copied = store.upsert("s", "up-copy", 1, texts, np.stack([c["vector"] for c in chunks]),
                              space_vectors={"small": rows})
        assert copied.status == "written"

    # A Store opened with the small space's embedder embeds that space's vectors itself (the
    # default space's vectors are the caller's, its model being another).
    with ratchetdb.Store(db, embedder=small) as store:
        out = store.upsert("s", "emb", 1, ["embedded for small"], big.embed(["embedded for small"]))
        assert out.status == "written"
        [op] = store.write_batch([{"op": "upsert", "source": "s", "id": "emb2", "version": 1,
                                   "texts": ["batched for small"],
                                   "vectors": big.embed(["batched for small"])}])
        assert op.status == "written"
        for text in ["embedded for small", "batched for small"]:
            found, score = nearest_in_small(store, text)
            assert found == text and score == pytest.approx(1.0, abs=1e-5)
        # A new revision keeping a text reuses its stored vectors; the new text is embedded.
        again = store.upsert("s", "emb", 2, ["embedded for small", "a new part"],
                             [None, big.embed(["a new part"])[0]])
        assert again.status == "written" and again.chunks_reused == 1
        assert nearest_in_small(store, "a new part")[0] == "a new part"
        assert store.verify().ok
        spaces = {s["name"]: s for s in store.spaces()}
        assert spaces["small"]["complete"] and spaces["small"]["vectors"] == spaces["default"]["vectors"]
