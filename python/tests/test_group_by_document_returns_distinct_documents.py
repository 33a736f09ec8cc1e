"""Issue 45, item 5: the top hits could be five chunks of one file. `group_by_document=True`
returns one hit per document (its best chunk): `k` distinct documents, each with the chunk
an ungrouped exact search ranks highest among that document's, for vector, text, hybrid and
many-query search."""

import numpy as np
import ratchetdb


def _store(tmp_path):
    store = ratchetdb.Store(str(tmp_path / "g.redb"))
    # One long document whose chunks all lie next to the query and all say "ratchet", and
    # six short ones further away.
    long_texts = [f"ratchet pawl detail {i}" for i in range(30)]
    long_vectors = np.array([[1.0, 0.01 * i, 0.0] for i in range(30)], dtype=np.float32)
    store.upsert("docs", "long", 1, long_texts, long_vectors)
    for d in range(6):
        store.upsert("docs", f"short{d}", 1, [f"ratchet note {d}", "other words"],
                     np.array([[1.0, 0.5 + d, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32))
    return store


def _best_per_document(hits, k):
    seen, out = set(), []
    for hit in hits:
        if hit.id not in seen:
            seen.add(hit.id)
            out.append((hit.id, hit.position))
    return out[:k]


def test_group_by_document_returns_k_distinct_documents(tmp_path):
    with _store(tmp_path) as store:
        query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
        plain = store.search(query, k=5, exact=True)
        assert len({h.id for h in plain}) == 1, "ungrouped, one document fills the top 5"
        full = store.search(query, k=100, exact=True)
        grouped = store.search(query, k=5, exact=True, group_by_document=True)
        assert [(h.id, h.position) for h in grouped] == _best_per_document(full, 5)
        assert len({h.id for h in grouped}) == 5

        text = store.search_text("ratchet", k=4, group_by_document=True)
        assert [(h.id, h.position) for h in text] == _best_per_document(
            store.search_text("ratchet", k=100), 4)

        hybrid = store.search_hybrid("ratchet", query, k=4, group_by_document=True)
        assert len({h.id for h in hybrid}) == 4

        many = store.search_many(np.stack([query, query]), k=3, exact=True,
                                 group_by_document=True)
        assert all(len({h.id for h in hits}) == 3 for hits in many)


def test_group_by_document_must_be_a_bool(tmp_path):
    with _store(tmp_path) as store:
        try:
            store.search(np.array([1.0, 0.0, 0.0], dtype=np.float32), k=2,
                         group_by_document="yes")
        except ratchetdb.InputError as error:
            assert error.field == "group_by_document"
        else:
            raise AssertionError("a str for group_by_document must be refused")
