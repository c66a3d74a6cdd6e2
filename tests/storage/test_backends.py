"""What every store relies on, on both engines: migrations applied once (also by processes
starting together), a duplicate key reported as a conflict, claims that one process wins, a
repair memory that another process reads, and a storage that cannot be reached said so."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from rca.star.memory import Pattern, RepairRecord
from storage.alerts import AlertStore
from storage.database import Conflict, Migration, Unavailable, open_database
from storage.investigations import MIGRATIONS, Store
from storage.repair_memory import SqlRepairMemory

STEPS = (
    Migration(1, ("create table if not exists things (id {serial}, name {text}, size {float})",)),
    Migration(2, ("create table if not exists tags (name {text} primary key, n {int})",)),
)


def test_migrations_apply_in_order_once_and_resume(record: str) -> None:
    db = open_database(record)
    assert db.migrate("things", STEPS[:1]) == 1
    db.insert("things", {"name": "a", "size": 1.5})
    assert db.migrate("things", STEPS) == 2  # only the new step runs: the row stays
    assert db.migrate("things", STEPS) == 2
    assert [r["name"] for r in db.query("select name from things")] == ["a"]
    db.insert("tags", {"name": "x", "n": 1})
    with pytest.raises(Conflict):
        db.insert("tags", {"name": "x", "n": 2})
    db.close()


def test_a_transaction_is_kept_whole_or_not_at_all(record: str) -> None:
    db = open_database(record)
    db.migrate("things", STEPS)
    with pytest.raises(Conflict), db.transaction():
        db.insert("tags", {"name": "y", "n": 1})
        db.insert("tags", {"name": "y", "n": 2})
    assert db.query("select count(*) as n from tags")[0]["n"] == 0
    db.close()


def _open_store(target: str, go: object, out: str) -> None:
    go.wait()  # type: ignore[attr-defined]
    store = Store(target)
    Path(out).write_text(str(store.first_delivery("Ev-same")))
    store.close()


def test_processes_starting_together_migrate_once_and_one_takes_a_delivery(record: str, tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    go = context.Event()
    outs = [tmp_path / f"took-{i}.txt" for i in range(4)]
    procs = [context.Process(target=_open_store, args=(record, go, str(out))) for out in outs]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sorted(out.read_text() for out in outs) == ["False", "False", "False", "True"]
    db = open_database(record)
    assert (
        db.query("select version from schema_migrations where component = 'investigations'")[0]["version"]
        == MIGRATIONS[-1].version
    )
    db.close()


def test_an_alert_group_opens_one_thread_whoever_asks(record: str) -> None:
    first, second = AlertStore(record), AlertStore(record)  # two replicas, two connections
    assert first.claim("g1", channel="C1", service="api", labels={"a": "b"}, fired=1.0)
    assert not second.claim("g1", channel="C1", service="api", labels={"a": "b"}, fired=1.0)
    second.notified("g1")
    assert first.resolve("g1", 5.0) and not second.resolve("g1", 6.0)
    group = second.group("g1")
    assert group is not None and group.notifications == 2 and group.resolved == 5.0
    first.unrouted({"x": "y"})
    assert second.unrouted_since(time.time() - 60) == 1
    # which alerts a thread was told of lives in the record: another replica (or a restart) tells none twice
    assert first.tell("g1", {"f1", "f2"}) == {"f1", "f2"}
    assert second.tell("g1", {"f1", "f2", "f3"}) == {"f3"} and first.tell("g1", {"f2", "f3"}) == set()
    # it resolved; it fires again: one replica re-opens it, and the thread hears its alerts anew
    assert second.refire("g1", 9.0) and not first.refire("g1", 9.0)
    again = first.group("g1")
    assert again is not None and again.status == "firing" and again.fired == 9.0 and again.resolved is None
    assert first.tell("g1", {"f1"}) == {"f1"}
    first.close()
    second.close()


def test_the_repair_memory_is_shared_by_every_opener(record: str) -> None:
    writer, reader = SqlRepairMemory(record), SqlRepairMemory(record)
    writer.remember(RepairRecord(Pattern("cpu", "logs,metrics", 3, 1), "hypothesis_set", "restore", 0.2))
    writer.remember(RepairRecord(Pattern("cpu", "logs,metrics", 9, 4), "evidence_package", "widen", 0.1))
    found = reader.similar(Pattern("cpu", "logs,metrics", 3, 1))
    assert [r.patch for r in found] == ["restore", "widen"]
    writer.close()
    reader.close()


def test_a_postgresql_that_cannot_be_reached_is_reported_not_waited_on() -> None:
    started = time.monotonic()
    with pytest.raises(Unavailable, match="PostgreSQL cannot be reached"):
        Store("postgresql://postgres@127.0.0.1:1/none")
    assert time.monotonic() - started < 10
