"""Issue 46 (embedders in the bindings): ratchetdb.HashingEmbedder gives the vectors the Rust
hashing embedder gives: those `ratchet ingest` stores for a folder (read back with `ratchet
export --vectors`), within 1e-6, from `embed` and from a Store that embeds the texts itself."""

import numpy as np

import ratchetdb
from conftest import rust_vectors

TEXTS = [
    "The ratchet turns one way only.",
    "Embeddings, embedding and EMBEDDED: trigrams overlap.",
    "Ünïcödé wörds, 数字 123 and punctuation!?",
    "a",
    "the same words twice: the same words twice",
]


def test_hashing_embedder_matches_the_cli(tmp_path):
    rust = rust_vectors(tmp_path, TEXTS)
    assert len(rust) == len(TEXTS)
    texts = list(rust)
    embedder = ratchetdb.HashingEmbedder(384)
    assert embedder.model == "hash-lexical-v1-384" and embedder.dimension == 384

    embedded = embedder.embed(texts)
    assert embedded.dtype == np.float32 and embedded.shape == (len(texts), 384)
    for text, row in zip(texts, embedded):
        np.testing.assert_allclose(row, rust[text], rtol=0, atol=1e-6, err_msg=text)

    with ratchetdb.Store(tmp_path / "py.redb", embedder=embedder) as store:
        for i, text in enumerate(texts):
            assert store.upsert("docs", str(i), 1, [text]).status == "written"
        assert store.model == "hash-lexical-v1-384"
        for i, text in enumerate(texts):
            stored = store.get("docs", str(i), vectors=True)["chunks"][0]["vector"]
            np.testing.assert_allclose(stored, rust[text], rtol=0, atol=1e-6, err_msg=text)
