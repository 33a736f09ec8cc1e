"""Many Python threads write through one store: the GIL is released during every call, and
the store's Writer commits their writes together (group commit)."""

import threading
import time

import numpy as np

import ratchetdb


def test_many_threads_write_through_one_store_with_group_commit(store):
    threads, per_thread = 8, 40
    errors = []

    def work(t):
        try:
            for i in range(per_thread):
                out = store.upsert(
                    f"t{t}", f"d{i}", 1, [f"text {t} {i}"], [[1.0, float(t), float(i)]]
                )
                assert out.status == "written"
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    stats = store.stats()
    assert stats["documents"] == threads * per_thread
    writer = stats["writer"]
    assert writer["ops"] == threads * per_thread
    # Group commit: some transaction carried several threads' writes.
    assert writer["max_batch_ops"] > 1
    assert writer["batches"] < writer["ops"]
    assert store.verify().ok


def test_the_gil_is_released_while_rust_works(store):
    rng = np.random.default_rng(1)
    ops = [
        {
            "op": "upsert",
            "source": "s",
            "id": f"d{i}",
            "version": 1,
            "texts": [f"t{i}-{j}" for j in range(20)],
            "vectors": rng.standard_normal((20, 64)).astype(np.float32),
        }
        for i in range(300)
    ]
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
    # Long Rust calls: the counting thread keeps running only if they release the GIL.
    # Python switches threads every 5 ms; a call holding the GIL would freeze the counter.
    calls = [
        lambda: store.write_batch(ops),
        lambda: store.search_many(rng.standard_normal((300, 64)), k=10, exact=True),
        lambda: store.verify(),
    ]
    for call in calls:
        start = time.perf_counter()
        before = ticks[0]
        call()
        during = ticks[0] - before
        elapsed = time.perf_counter() - start
        if elapsed > 0.05:
            assert during > 1000, (during, elapsed)
    stop.set()
    counter.join()
