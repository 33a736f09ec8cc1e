# Regression: reads that can wait on the store's writer held the GIL meanwhile: the
# `dimension` property, and the vector spaces (`store.spaces()`) and recorded model and
# dimension an embedding write or `search_query` reads first, wait for a lock a commit
# recording the dimension holds across its fsync; every other Python thread stopped too.
"""`spaces()`, `dimension` and a write that embeds release the GIL while in Rust: another
Python thread makes progress during the call.

Deterministic in what it concludes: with a switch interval far longer than the test, the
interpreter never takes the GIL from a running thread, so the counter thread (which gives
the GIL up by itself, `time.sleep(0)`) can only advance while the main thread has released
it. A call during which the counter moved released the GIL; one that holds it cannot let it
move, however long it runs (checked on a pure-Python call). Each call is tried until the
counter moves once; the deadline only bounds a failing run."""

import sys
import threading
import time

import ratchetdb

DEADLINE = 60.0


def test_blocking_reads_release_the_gil(tmp_path):
    store = ratchetdb.Store(tmp_path / "s.redb", embedder=ratchetdb.HashingEmbedder(16))
    store.upsert("s", "seed", 1, ["the ratchet turns one way"])
    ticks = [0]
    running = threading.Event()
    stop = threading.Event()

    def count():
        running.set()
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0)  # gives the GIL up, and waits for it back

    def moved_during(call):
        """Whether the counter moved during one of the calls of `call` (tried until it did)."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            before = ticks[0]
            call()
            if ticks[0] != before:
                return True
        return False

    def holds_the_gil():
        return sum(range(2000))

    versions = iter(range(2, 10**9))
    previous = sys.getswitchinterval()
    sys.setswitchinterval(10_000.0)
    counter = threading.Thread(target=count)
    counter.start()
    try:
        running.wait()
        # The measure: a call holding the GIL never lets the counter move.
        for _ in range(2000):
            before = ticks[0]
            holds_the_gil()
            assert ticks[0] == before
        assert moved_during(store.spaces)
        assert moved_during(lambda: store.dimension)
        assert moved_during(lambda: store.upsert("s", "doc", next(versions), ["one way"]))
    finally:
        stop.set()
        counter.join()
        sys.setswitchinterval(previous)
        store.close()
    assert store.closed
