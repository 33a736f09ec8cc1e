"""Issue 46 (embedders in the bindings): a Store opened with embedder= embeds the texts of an
upsert given without vectors, reuses the stored vector of a text it already holds, and
search_query / search_hybrid embed the question."""

import numpy as np

import ratchetdb

TEXTS = [
    "The ratchet turns one way only.",
    "Bananas are yellow and grow in bunches.",
    "A lighthouse keeps ships off the rocks at night.",
]


def test_upsert_without_vectors_and_search_query(tmp_path):
    embedder = ratchetdb.HashingEmbedder(64)
    with ratchetdb.Store(tmp_path / "s.redb", embedder=embedder) as store:
        assert store.embedder is embedder
        assert (store.model, store.dimension) == ("hash-lexical-v1-64", 64)
        first = store.upsert("notes", "a", 1, TEXTS, metas=[{"n": i} for i in range(3)])
        assert (first.status, first.chunks_written) == ("written", 3)

        hits = store.search_query("which fruit is yellow?", k=1)
        assert [h.text for h in hits] == [TEXTS[1]]
        hits = store.search_query("ships at night", k=3, where={"n": {"$ne": 2}})
        assert TEXTS[2] not in [h.text for h in hits] and len(hits) == 2
        hybrid = store.search_hybrid("lighthouse rocks", k=1)
        assert [h.text for h in hybrid] == [TEXTS[2]]
        # The question's vector is the embedder's: search(vector) agrees with search_query.
        vector = embedder.embed(["turns one way"])[0]
        assert [h.text for h in store.search(vector, k=3)] == [
            h.text for h in store.search_query("turns one way", k=3)
        ]

        # A new revision: the stored texts reuse their vectors, only the new one is embedded.
        second = store.upsert("notes", "a", 2, TEXTS + ["A fourth chunk, new."])
        assert (second.chunks_written, second.chunks_reused) == (1, 3)
        stored = store.get("notes", "a", vectors=True)["chunks"]
        expected = embedder.embed([c["text"] for c in stored])
        for chunk, row in zip(stored, expected):
            np.testing.assert_allclose(chunk["vector"], row, rtol=0, atol=1e-6)
        assert store.verify().ok

    # Reopened with the same embedder: accepted, and searchable by text at once.
    with ratchetdb.Store(tmp_path / "s.redb", embedder=ratchetdb.HashingEmbedder(64)) as store:
        assert store.search_query("A fourth chunk", k=1)[0].text == "A fourth chunk, new."
    with ratchetdb.Store(
        tmp_path / "s.redb", read_only=True, embedder=ratchetdb.HashingEmbedder(64)
    ) as store:
        assert store.search_query("bananas", k=1)[0].text == TEXTS[1]
