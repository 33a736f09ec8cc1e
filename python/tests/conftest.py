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


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def ratchet_binary():
    """The `ratchet` CLI of this checkout, to compare the package with: `$RATCHET_BIN`, else
    the debug build in the cargo target directory (`cargo test --features minilm` leaves one
    there), else built now with `cargo build --bin ratchet --features minilm,postgres` (the
    features of the test command, so nothing is compiled twice)."""
    import os
    import pathlib
    import subprocess

    if os.environ.get("RATCHET_BIN"):
        return pathlib.Path(os.environ["RATCHET_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    binary = target / "debug" / "ratchet"
    if not binary.is_file():
        subprocess.run(
            ["cargo", "build", "--quiet", "--bin", "ratchet", "--features", "minilm,postgres"],
            cwd=ROOT,
            check=True,
        )
    return binary


def rust_vectors(tmp_path, texts, *, model_dir=None):
    """The vectors the `ratchet` CLI stores for `texts` (one file each, ingested as a folder
    with the hashing embedder, or MiniLM from `model_dir`), read back with `ratchet export
    --vectors`: a dict text -> vector."""
    import json
    import subprocess

    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate(texts):
        (folder / f"{i}.txt").write_text(text, encoding="utf-8")
    db = tmp_path / "cli.redb"
    binary = str(ratchet_binary())
    ingest = [binary, "ingest", "--db", str(db), str(folder)]
    if model_dir is not None:
        ingest += ["--model", str(model_dir)]
    run = subprocess.run(ingest, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    run = subprocess.run(
        [binary, "export", "--db", str(db), "--vectors"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    vectors = {}
    for line in run.stdout.splitlines():
        record = json.loads(line)
        for chunk in record.get("chunks") or []:
            vectors[chunk["text"]] = np.asarray(chunk["vector"], dtype=np.float32)
    return vectors
