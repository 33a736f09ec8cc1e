"""Issue 46 (vector spaces in the bindings): `search`, `search_many`, `search_query` and
`search_hybrid` take `space=` (default: the active space); `spaces()` lists every space. A
Store opened with the embedder of another space's model is accepted and embeds questions for
that space; an embedder of another model than the searched space's is a MismatchError naming
`space`, and an unknown space an InputError naming `space`."""

import subprocess

import numpy as np
import pytest

import ratchetdb
from conftest import ratchet_binary

TEXTS = [
    "The ratchet turns one way only.",
    "Bananas are yellow and grow in bunches.",
    "A lighthouse keeps ships off the rocks at night.",
    "The pawl drops into the gear's teeth.",
    "Rain fell on the harbour all week.",
]


def keys(hits):
    return [(h.source, h.id, h.position) for h in hits]


def test_search_a_named_vector_space(tmp_path):
    db = tmp_path / "spaces.redb"
    narrow, wide = ratchetdb.HashingEmbedder(64), ratchetdb.HashingEmbedder(16)
    with ratchetdb.Store(db, embedder=narrow) as store:
        for i, text in enumerate(TEXTS):
            store.upsert("notes", f"d{i}", 1, [text, f"{text} Again, note {i}."])
    run = subprocess.run(
        [str(ratchet_binary()), "reembed", "--db", str(db), "--hashing", "16", "--space", "wide"],
        capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr

    question = "ships and rocks at night"
    with ratchetdb.Store(db, embedder=narrow) as store:
        spaces = store.spaces()
        assert [(s["name"], s["model"], s["dimension"], s["active"], s["complete"]) for s in spaces] == [
            ("default", narrow.model, 64, True, True),
            ("wide", wide.model, 16, False, True),
        ]
        assert all(s["vectors"] == s["live_chunks"] == 2 * len(TEXTS) for s in spaces)

        wide_vector = wide.embed([question])[0]
        in_wide = store.search(wide_vector, k=4, exact=True, space="wide")
        assert len(in_wide) == 4
        # The active space is the default one: its own embedder's question.
        assert keys(store.search_query(question, k=4, exact=True)) == keys(
            store.search(narrow.embed([question])[0], k=4, exact=True, space="default")
        )
        many = store.search_many(np.stack([wide_vector, wide_vector]), k=4, exact=True, space="wide")
        assert [keys(h) for h in many] == [keys(in_wide)] * 2
        # This Store's embedder makes the default space's vectors, not wide's.
        with pytest.raises(ratchetdb.MismatchError) as raised:
            store.search_query(question, space="wide")
        assert raised.value.field == "space"
        with pytest.raises(ratchetdb.MismatchError) as raised:
            store.search_hybrid(question, space="wide")
        assert raised.value.field == "space"
        for call in (
            lambda: store.search(wide_vector, space="nope"),
            lambda: store.search_many(np.stack([wide_vector]), space="nope"),
            lambda: store.search_hybrid(question, wide_vector, space="nope"),
        ):
            with pytest.raises(ratchetdb.InputError) as raised:
                call()
            assert raised.value.field == "space"
        # A vector of the default space's width is refused in wide.
        with pytest.raises(ratchetdb.InputError):
            store.search(narrow.embed([question])[0], space="wide")

    # Opened with the embedder of the wide space's model: its questions are embedded for it.
    with ratchetdb.Store(db, embedder=wide) as store:
        assert keys(store.search_query(question, k=4, exact=True, space="wide")) == keys(in_wide)
        assert keys(store.search_hybrid(question, k=4, space="wide")) == keys(
            store.search_hybrid(question, wide_vector, k=4, space="wide")
        )
        with pytest.raises(ratchetdb.MismatchError) as raised:
            store.search_query(question)
        assert raised.value.field == "space"
    # An embedder of no space's model is still refused.
    with pytest.raises(ratchetdb.MismatchError):
        ratchetdb.Store(db, embedder=ratchetdb.HashingEmbedder(32))
