"""Issue 46 (embedders in the bindings): embedding runs with the GIL released, in
`Embedder.embed` and where a Store embeds (an upsert without vectors, `search_query`):
another Python thread keeps running meanwhile."""

import threading
import time

import ratchetdb

TEXTS = [f"chunk {i}: " + " ".join(f"word{(i * 7 + j) % 997}" for j in range(300)) for i in range(400)]


def test_embedding_releases_the_gil(tmp_path):
    embedder = ratchetdb.HashingEmbedder(384)
    store = ratchetdb.Store(tmp_path / "s.redb", embedder=embedder)
    ticks = [0]
    running = threading.Event()
    stop = threading.Event()

    def count():
        running.set()
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    running.wait()
    # Python switches threads every 5 ms; a call holding the GIL would freeze the counter.
    calls = [
        lambda: embedder.embed(TEXTS),
        lambda: store.upsert("s", "big", 1, TEXTS),
        lambda: [store.search_query(text[:2000], k=3) for text in TEXTS],
    ]
    try:
        for call in calls:
            start = time.perf_counter()
            before = ticks[0]
            call()
            during = ticks[0] - before
            elapsed = time.perf_counter() - start
            if elapsed > 0.05:
                assert during > 1000, (during, elapsed)
    finally:
        stop.set()
        counter.join()
        store.close()
