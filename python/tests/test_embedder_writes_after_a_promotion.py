"""Regression (issue 46): after `ratchet reembed --activate --drop-old` promoted a space in
the default one's place, a Store opened with the new model's embedder refused every upsert of
new text: `spaces()` lists the default space under the promoted space's name, the package
took it for an extra space and sent its vectors as that space's, which the store refuses
(the name now means the default space). Writes after a promotion embed with the store's one
model, and `search_query` finds them (by default, under the promoted name and under `default`)."""

import subprocess

import ratchetdb
from conftest import ratchet_binary

TEXTS = [
    "The ratchet turns one way only.",
    "Bananas are yellow and grow in bunches.",
    "A lighthouse keeps ships off the rocks at night.",
]


def test_embedder_writes_after_a_promotion(tmp_path):
    db = tmp_path / "promoted.redb"
    with ratchetdb.Store(db, embedder=ratchetdb.HashingEmbedder(64)) as store:
        for i, text in enumerate(TEXTS):
            store.upsert("notes", f"d{i}", 1, [text])
    run = subprocess.run(
        [str(ratchet_binary()), "reembed", "--db", str(db), "--hashing", "32",
         "--space", "wide", "--activate", "--drop-old"],
        capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr

    wide = ratchetdb.HashingEmbedder(32)
    with ratchetdb.Store(db, embedder=wide) as store:
        assert [(s["name"], s["model"], s["dimension"]) for s in store.spaces()] == [
            ("wide", wide.model, 32)
        ]
        text = "Owls hunt mice in the barn after dusk."
        store.upsert("notes", "owl", 1, [text])
        store.upsert("notes", "d0", 2, ["The pawl drops into the gear's teeth."])
        for space in (None, "wide", "default"):
            hits = store.search_query(text, k=1, exact=True, space=space)
            assert [(h.id, h.text) for h in hits] == [("owl", text)]
        assert store.verify().ok
