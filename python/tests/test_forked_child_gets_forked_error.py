"""Issue 44 item 5: after os.fork() with a store open, the child's upsert blocked forever
(its writer thread does not exist in the child; its search seemed to work). Every call of
the parent's store in a forked child raises ForkedError, a RatchetError telling it to open
its own store, which it can; the parent's store is unaffected."""

import multiprocessing
import os

import pytest

import ratchetdb

# The longest a child may take; a hang (the defect) fails the test instead of blocking it.
HANG_GUARD_SECONDS = 60


def child(store, path, results):
    outcome = {}
    calls = {
        "upsert": lambda: store.upsert("s", "child", 1, ["c"], [[0.0, 1.0]]),
        "delete": lambda: store.delete("s", "a", 9),
        "add": lambda: store.add("s", ["x"], 1, ["x"], [[0.0, 1.0]]),
        "search": lambda: store.search([1.0, 0.0]),
        "get": lambda: store.get("s", "a"),
        "stats": lambda: store.stats(),
        "len": lambda: len(store),
    }
    for name, call in calls.items():
        try:
            call()
            outcome[name] = "returned"
        except ratchetdb.ForkedError as error:
            outcome[name] = "forked" if "open a Store of your own" in str(error) else str(error)
        except Exception as error:  # noqa: BLE001 - reported to the parent
            outcome[name] = f"{type(error).__name__}: {error}"
    store.close()  # forgets the parent's store, never blocks
    with ratchetdb.Store(path, read_only=True) as own:
        outcome["own store"] = [h.id for h in own.search([1.0, 0.0], k=1)]
    results.put(outcome)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_forked_child_gets_forked_error_and_can_open_its_own_store(path):
    context = multiprocessing.get_context("fork")
    store = ratchetdb.Store(path)
    store.upsert("s", "a", 1, ["a"], [[1.0, 0.0]])
    results = context.Queue()
    process = context.Process(target=child, args=(store, path, results))
    process.start()
    try:
        outcome = results.get(timeout=HANG_GUARD_SECONDS)
    finally:
        process.join(HANG_GUARD_SECONDS)
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0
    expected = {name: "forked" for name in ["upsert", "delete", "add", "search", "get", "stats", "len"]}
    expected["own store"] = ["a"]
    assert outcome == expected
    # The parent's store goes on writing and reading.
    assert store.upsert("s", "b", 1, ["b"], [[0.0, 1.0]]).status == "written"
    assert {h.id for h in store.search([1.0, 1.0])} == {"a", "b"}
    store.close()


def test_a_store_opened_in_the_child_after_the_fork_works(path):
    with ratchetdb.Store(path) as store:
        store.upsert("s", "a", 1, ["a"], [[1.0, 0.0]])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: opens, writes, closes its own store
        code = 1
        try:
            with ratchetdb.Store(path) as own:
                code = 0 if own.upsert("s", "c", 1, ["c"], [[0.0, 1.0]]).status == "written" else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    import select

    ready, _, _ = select.select([read], [], [], HANG_GUARD_SECONDS)
    if not ready:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    assert ready and os.read(read, 1) == b"\x00"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    with ratchetdb.Store(path, read_only=True) as store:
        assert store.get("s", "c") is not None
