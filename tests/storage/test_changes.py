"""Changes kept in the bot's record, SQLite and PostgreSQL alike: read back by window, service
and workspace, a repeated delivery stored once, and every field as it was posted."""

from __future__ import annotations

from dataclasses import replace

from rca.changes import Change, ChangeKind
from storage.changes import ChangeStore

T = 1_796_374_800.0


def test_changes_are_read_back_by_window_service_and_workspace(record: str) -> None:
    store = ChangeStore(record)
    deploy = Change("orders", ChangeKind.DEPLOY, T + 60, "1.4.2", "1.4.3", "ci", "https://ci.example.com/7", "marker")
    flag = Change("payments", ChangeKind.FLAG, T + 120, "off", "on", "ana", "", "marker")
    old = replace(deploy, time=T - 3600, after="1.4.2", before="1.4.1")
    try:
        assert store.add(deploy) and store.add(flag) and store.add(old)
        assert not store.add(deploy)  # delivered twice, stored once
        assert store.add(deploy, workspace="T2")  # another workspace's record
        assert store.between(T, T + 1800) == [deploy, flag]
        assert store.between(T, T + 1800, services=["orders"]) == [deploy]
        assert store.between(T - 7200, T + 1800, services=["orders", "nothing"]) == [old, deploy]
        assert store.between(T, T + 1800, workspace="T2") == [deploy]
        assert store.between(T + 1801, T + 3600) == []
    finally:
        store.close()
    again = ChangeStore(record)  # what was written outlives the process that wrote it
    try:
        assert again.between(T, T + 1800) == [deploy, flag]
    finally:
        again.close()
