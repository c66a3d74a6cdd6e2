"""Alertmanager's alert groups in the bot's record (SQLite or PostgreSQL): which thread each group opened, its
investigation, its labels, when it fired and resolved; and the notifications no route took.

A group is claimed by inserting its row (the group key is the primary key), so two deliveries
of the same group, or two bot processes, open one thread between them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.database import Conflict, Migration, open_database

GROUPS = "alert_groups"
UNROUTED = "alerts_unrouted"
MIGRATIONS = (
    Migration(
        1,
        (
            f"create table if not exists {GROUPS} (key {{text}} primary key, channel {{text}}, service {{text}}, "
            "status {text}, thread_ts {text}, investigation {text}, labels {text}, fired {float}, resolved {float}, "
            "notifications {int}, created {float})",
            f"create table if not exists {UNROUTED} (id {{serial}}, created {{float}}, labels {{text}})",
        ),
    ),
    Migration(2, (f"alter table {GROUPS} add column told {{text}}",)),  # fingerprints told in the thread (JSON)
)


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
    def __init__(self, target: Path | str) -> None:
        self._db = open_database(target)
        self._db.migrate("alerts", MIGRATIONS)

    def close(self) -> None:
        self._db.close()

    def claim(
        self, key: str, *, channel: str, service: str, labels: dict[str, str], fired: float, status: str = "firing"
    ) -> bool:
        """True for the first delivery of a group (this process opens its thread), else False."""
        row = {
            "key": key,
            "channel": channel,
            "service": service,
            "status": status,
            "thread_ts": "",
            "investigation": "",
            "labels": json.dumps(labels),
            "fired": fired,
            "resolved": None,
            "notifications": 1,
            "created": time.time(),
        }
        try:
            self._db.insert(GROUPS, row)
        except Conflict:
            return False
        return True

    def tell(self, key: str, fingerprints: set[str]) -> set[str]:
        """Of these alerts (by fingerprint), those not yet told in the group's thread, now
        recorded as told: compare-and-set, so two processes never tell one alert twice."""
        for _ in range(20):
            rows = self._db.query(f"select told from {GROUPS} where key = ?", [key])
            if not rows:
                return set()
            before = rows[0]["told"]
            told = set(json.loads(before or "[]"))
            new = fingerprints - told
            if not new:
                return set()
            after = json.dumps(sorted(told | new))
            where = "told is null" if before is None else "told = ?"
            args = [after, key] if before is None else [after, key, before]
            if self._db.execute(f"update {GROUPS} set told = ? where key = ? and {where}", args) == 1:
                return new
        return set()  # contended past reason: the next notification tells them

    def refire(self, key: str, fired: float) -> bool:
        """A resolved group fires again: firing once more from `fired` (True for the one process
        that sets it so; False where the group is not resolved)."""
        return (
            self._db.execute(
                f"update {GROUPS} set status = 'firing', fired = ?, resolved = null, told = null, "
                "notifications = notifications + 1 where key = ? and status = 'resolved'",
                [fired, key],
            )
            == 1
        )

    def opened(self, key: str, *, thread_ts: str, investigation: str) -> None:
        self._db.execute(
            f"update {GROUPS} set thread_ts = ?, investigation = ? where key = ?", [thread_ts, investigation, key]
        )

    def notified(self, key: str, times: int = 1) -> None:
        self._db.execute(f"update {GROUPS} set notifications = notifications + ? where key = ?", [times, key])

    def fold(self, key: str) -> None:
        """The group opened no thread of its own: it is counted in its channel's "more alerts" line."""
        self._db.execute(f"update {GROUPS} set status = 'grouped' where key = ?", [key])

    def resolve(self, key: str, at: float) -> bool:
        """Mark a firing (or folded) group resolved; False when it was not (resolved already, unknown)."""
        return (
            self._db.execute(
                f"update {GROUPS} set status = 'resolved', resolved = ? "
                "where key = ? and status in ('firing', 'grouped')",
                [at, key],
            )
            == 1
        )

    def group(self, key: str) -> AlertGroup | None:
        rows = self._db.query(f"select * from {GROUPS} where key = ?", [key])
        return _group(rows[0]) if rows else None

    def groups(self, *, channel: str | None = None) -> list[AlertGroup]:
        if channel is None:
            rows = self._db.query(f"select * from {GROUPS} order by created")
        else:
            rows = self._db.query(f"select * from {GROUPS} where channel = ? order by created", [channel])
        return [_group(r) for r in rows]

    def unrouted(self, labels: dict[str, str]) -> None:
        self._db.insert(UNROUTED, {"created": time.time(), "labels": json.dumps(labels)})

    def unrouted_since(self, since: float) -> int:
        return int(self._db.query(f"select count(*) as n from {UNROUTED} where created >= ?", [since])[0]["n"])


def _group(r: dict[str, Any]) -> AlertGroup:
    return AlertGroup(
        r["key"],
        r["channel"],
        r["service"],
        r["status"],
        r["thread_ts"] or "",
        r["investigation"] or "",
        json.loads(r["labels"] or "{}"),
        r["fired"],
        r["resolved"],
        r["notifications"],
    )
