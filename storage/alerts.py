"""Alertmanager's alert groups in the bot's SQLite file: which thread each group opened, its
investigation, its labels, when it fired and resolved; and the notifications no route took.

A group is claimed by inserting its row (the group key is the primary key), so two deliveries
of the same group, or two bot processes, open one thread between them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.database import open_database

GROUPS = "alert_groups"
UNROUTED = "alerts_unrouted"


@dataclass(frozen=True, slots=True)
class AlertGroup:
    key: str
    channel: str
    service: str
    status: str  # firing | resolved | grouped (folded into a channel's "more alerts" line)
    thread_ts: str
    investigation: str
    labels: dict[str, str]
    fired: float  # the alerts' earliest startsAt
    resolved: float | None
    notifications: int


class AlertStore:
    def __init__(self, path: Path | str) -> None:
        self._db = open_database(Path(path))
        self._lock = threading.Lock()
        if not self._db[GROUPS].exists():  # type: ignore[union-attr]
            self._db.create_table(GROUPS, {"key": str, "channel": str, "service": str, "status": str,
                                           "thread_ts": str, "investigation": str, "labels": str, "fired": float,
                                           "resolved": float, "notifications": int, "created": float},
                                  pk="key")  # fmt: skip
        if not self._db[UNROUTED].exists():  # type: ignore[union-attr]
            self._db.create_table(UNROUTED, {"id": int, "created": float, "labels": str}, pk="id")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def claim(self, key: str, *, channel: str, service: str, labels: dict[str, str], fired: float,
              status: str = "firing") -> bool:  # fmt: skip
        """True for the first delivery of a group (this process opens its thread), else False."""
        row = {"key": key, "channel": channel, "service": service, "status": status, "thread_ts": "",
               "investigation": "", "labels": json.dumps(labels), "fired": fired, "resolved": None,
               "notifications": 1, "created": time.time()}  # fmt: skip
        try:
            with self._lock, self._db.conn:
                self._db[GROUPS].insert(row)  # type: ignore[union-attr]
        except sqlite3.IntegrityError:
            return False
        return True

    def opened(self, key: str, *, thread_ts: str, investigation: str) -> None:
        with self._lock, self._db.conn:
            self._db.execute(f"update {GROUPS} set thread_ts = ?, investigation = ? where key = ?",
                             [thread_ts, investigation, key])  # fmt: skip

    def notified(self, key: str) -> None:
        with self._lock, self._db.conn:
            self._db.execute(f"update {GROUPS} set notifications = notifications + 1 where key = ?", [key])

    def fold(self, key: str) -> None:
        """The group opened no thread of its own: it is counted in its channel's "more alerts" line."""
        with self._lock, self._db.conn:
            self._db.execute(f"update {GROUPS} set status = 'grouped' where key = ?", [key])

    def resolve(self, key: str, at: float) -> bool:
        """Mark a firing (or folded) group resolved; False when it was not (resolved already, unknown)."""
        with self._lock, self._db.conn:
            return self._db.execute(f"update {GROUPS} set status = 'resolved', resolved = ? "
                                    "where key = ? and status in ('firing', 'grouped')", [at, key]).rowcount == 1  # fmt: skip

    def group(self, key: str) -> AlertGroup | None:
        with self._lock:
            rows = list(self._db[GROUPS].rows_where("key = ?", [key]))  # type: ignore[union-attr]
        return _group(rows[0]) if rows else None

    def groups(self, *, channel: str | None = None) -> list[AlertGroup]:
        where, args = ("channel = ?", [channel]) if channel is not None else (None, None)
        with self._lock:
            rows = list(self._db[GROUPS].rows_where(where, args, order_by="created"))  # type: ignore[union-attr]
        return [_group(r) for r in rows]

    def unrouted(self, labels: dict[str, str]) -> None:
        with self._lock, self._db.conn:
            self._db[UNROUTED].insert({"created": time.time(), "labels": json.dumps(labels)})  # type: ignore[union-attr]

    def unrouted_since(self, since: float) -> int:
        with self._lock:
            return int(self._db.execute(f"select count(*) from {UNROUTED} where created >= ?", [since]).fetchone()[0])


def _group(r: dict[str, Any]) -> AlertGroup:
    return AlertGroup(r["key"], r["channel"], r["service"], r["status"], r["thread_ts"] or "", r["investigation"] or "",
                      json.loads(r["labels"] or "{}"), r["fired"], r["resolved"], r["notifications"])  # fmt: skip
