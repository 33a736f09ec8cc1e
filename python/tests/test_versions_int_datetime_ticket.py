"""Versions are int, timezone-aware datetime or Ticket; the guard refuses anything not newer,
and Outcome reports status, reason and both versions."""

from datetime import datetime, timedelta, timezone

import pytest

import ratchetdb


def test_int_versions_and_every_outcome(store):
    v = [[1.0, 0.0]]
    assert store.upsert("s", "d", 2, ["new"], v).status == "written"
    late = store.upsert("s", "d", 1, ["old"], v)
    assert (late.status, late.reason) == ("skipped", "older")
    assert (late.stored_version, late.incoming_version) == (2, 1)
    assert store.upsert("s", "d", 2, ["new"], v).reason == "duplicate"
    assert store.upsert("s", "d", 2, ["other"], v).reason == "conflict"
    bumped = store.upsert("s", "d", 3, ["new"], v)
    assert (bumped.status, bumped.stored_version) == ("unchanged", 3)
    gone = store.delete("s", "d", 4)
    assert (gone.status, gone.chunks_removed) == ("deleted", 1)
    assert store.upsert("s", "d", 4, ["new"], v).reason == "tombstoned"
    assert not store.upsert("s", "d", 4, ["new"], v).applied


def test_datetime_versions_round_trip_to_the_microsecond(store):
    t = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)
    out = store.upsert("s", "d", t, ["a"], [[1.0]])
    assert out.stored_version == t
    other_zone = (t - timedelta(microseconds=1)).astimezone(timezone(timedelta(hours=5)))
    assert store.upsert("s", "d", other_zone, ["b"], [[1.0]]).reason == "older"
    assert store.get("s", "d")["version"] == t
    with pytest.raises(ratchetdb.InputError) as naive:
        store.upsert("s", "e", datetime(2024, 1, 1), ["a"], [[1.0]])
    assert naive.value.field == "version"


def test_tickets_increase_across_reopen_and_order_writes(path):
    with ratchetdb.Store(path) as s:
        first, second = s.ticket(), s.ticket()
        assert second > first and isinstance(first, ratchetdb.Ticket)
        assert s.upsert("s", "d", second, ["new"], [[1.0]]).status == "written"
        assert s.upsert("s", "d", first, ["old"], [[1.0]]).reason == "older"
        assert s.get("s", "d")["version"] == second
    with ratchetdb.Store(path) as s:
        assert s.ticket() > second


def test_mixing_version_kinds_on_a_document_raises(store):
    store.upsert("s", "d", 1, ["a"], [[1.0]])
    with pytest.raises(ratchetdb.VersionKindMismatchError) as error:
        store.upsert("s", "d", store.ticket(), ["b"], [[1.0]])
    assert error.value.field == "version"
    assert isinstance(error.value, ratchetdb.InputError)
    assert store.get("s", "d")["chunks"][0]["text"] == "a"
