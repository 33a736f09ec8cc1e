# Issue 45 item 8: exceptions raised in Python named the Rust API and the command line
# ("read it beside the writer with Store::open_read_only", "`--wait SECONDS`"). Every
# message a Python caller can meet names the Python API (Store(path, read_only=True)).
"""No exception message raised by the package names the Rust API or a command-line flag."""

import os
import re
import subprocess
import sys

import pytest

import ratchetdb

RUST_OR_CLI = re.compile(r"Store::|Options::|Limits::|open_read_only|Durability::|(^|[\s(`])--[a-z]")


def messages(tmp_path):
    """Every kind of error this scenario can provoke, as (name, exception)."""
    raised = []

    def catch(name, call):
        try:
            call()
        except ratchetdb.RatchetError as error:
            raised.append((name, error))
        else:
            raised.append((name, None))

    path = str(tmp_path / "a.redb")
    writer = ratchetdb.Store(path)
    writer.upsert("s", "a", 1, ["a"], [[1.0, 0.0]])
    catch("second writer (locked)", lambda: ratchetdb.Store(path))
    catch("ticket never issued", lambda: writer.upsert("s", "b", ratchetdb.Ticket(99), ["b"], [[1.0, 0.0]]))
    catch("dimension mismatch", lambda: writer.upsert("s", "b", 1, ["b"], [[1.0, 0.0, 0.0]]))
    catch("missing vector", lambda: writer.upsert("s", "b", 1, ["b"], [None]))
    catch("bad k", lambda: writer.search([1.0, 0.0], k=10**9))
    catch("bad bm25", lambda: writer.search_text("a", b=2.0))
    catch("bad fusion", lambda: writer.search_hybrid("a", [1.0, 0.0], rrf_k=0))
    catch("bad query", lambda: writer.search([1.0, 0.0, 0.0]))
    catch("bad filter", lambda: writer.search([1.0, 0.0], where={"$bogus": 1}))
    with ratchetdb.Store(path, read_only=True) as reader:
        catch("write on a reader", lambda: reader.upsert("s", "c", 1, ["c"], [[1.0, 0.0]]))
        catch("ticket on a reader", lambda: reader.ticket())
    writer.close()
    catch("closed", lambda: writer.search([1.0, 0.0]))
    catch("dimension differs on open", lambda: ratchetdb.Store(path, dimension=3))

    exclusive = str(tmp_path / "exclusive.redb")
    with ratchetdb.Store(exclusive, durability="none") as holder:
        holder.upsert("s", "a", 1, ["a"], [[1.0, 0.0]])
        catch("held exclusively", lambda: ratchetdb.Store(exclusive, read_only=True))

    empty = tmp_path / "empty.redb"
    empty.write_bytes(b"")
    catch("empty file", lambda: ratchetdb.Store(str(empty), read_only=True))
    junk = tmp_path / "junk.redb"
    junk.write_bytes(b"not a database" * 300)
    catch("not a store", lambda: ratchetdb.Store(str(junk)))
    catch("missing read-only", lambda: ratchetdb.Store(str(tmp_path / "missing.redb"), read_only=True))

    crashed = str(tmp_path / "crashed.redb")
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys, ratchetdb\n"
            "s = ratchetdb.Store(sys.argv[1])\n"
            "s.upsert('s', 'a', 1, ['a'], [[1.0, 0.0]])\n"
            "os._exit(0)\n",
            crashed,
        ],
        check=True,
    )
    catch("left by a crashed writer", lambda: ratchetdb.Store(crashed, read_only=True))
    return raised


def test_no_message_names_the_rust_api_or_a_flag(tmp_path):
    raised = messages(tmp_path)
    assert [name for name, error in raised if error is None] == []
    wrong = [(name, str(error)) for name, error in raised if RUST_OR_CLI.search(str(error))]
    assert wrong == []


def test_the_lock_and_read_only_messages_say_what_to_call_in_python(tmp_path):
    raised = dict(messages(tmp_path))
    assert isinstance(raised["second writer (locked)"], ratchetdb.StoreLockedError)
    assert "Store(path, read_only=True)" in str(raised["second writer (locked)"])
    assert isinstance(raised["write on a reader"], ratchetdb.ReadOnlyError)
    assert "read_only=True" in str(raised["write on a reader"])
    assert "Store.ticket()" in str(raised["ticket never issued"])
    assert raised["bad bm25"].field == "b"
    assert raised["bad fusion"].field == "rrf_k"
