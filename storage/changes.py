"""Changes in the bot's record (SQLite or PostgreSQL): every deploy, config push, flag, scaling
and rollback posted to `POST /changes`, kept per workspace, read back by window and service.

A repeated delivery of the same change (the same service, kind, time and version after) is
stored once: the natural key is the primary key.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from rca.changes import Change, ChangeKind
from storage.database import Conflict, Migration, open_database

CHANGES = "changes"
MIGRATIONS = (
    Migration(
        1,
        (
            f"create table if not exists {CHANGES} (workspace {{text}}, service {{text}}, kind {{text}}, "
            "changed_at {float}, version_before {text}, version_after {text}, who {text}, link {text}, source {text}, received {float}, "
            "primary key (workspace, service, kind, changed_at, version_after))",
        ),
    ),
)


class ChangeStore:
    def __init__(self, target: Path | str) -> None:
        self._db = open_database(target)
        self._db.migrate("changes", MIGRATIONS)

    def close(self) -> None:
        self._db.close()

    def add(self, change: Change, *, workspace: str = "") -> bool:
        """Record a change; False where it was recorded already (a repeated delivery)."""
        row = {
            "workspace": workspace,
            "service": change.service,
            "kind": change.kind.value,
            "changed_at": change.time,
            "version_before": change.before,
            "version_after": change.after,
            "who": change.who,
            "link": change.link,
            "source": change.source,
            "received": time.time(),
        }
        try:
            self._db.insert(CHANGES, row)
        except Conflict:
            return False
        return True

    def between(self, start: float, end: float, *, services: Iterable[str] = (), workspace: str = "") -> list[Change]:
        """The workspace's changes that took effect in [start, end], to any of `services` (all
        where none are named), earliest first."""
        named = sorted(set(services))
        where, args = "workspace = ? and changed_at >= ? and changed_at <= ?", list[object]([workspace, start, end])
        if named:
            where += f" and service in ({','.join('?' * len(named))})"
            args += named
        rows = self._db.query(f"select * from {CHANGES} where {where} order by changed_at, service", args)
        return [
            Change(
                service=r["service"],
                kind=ChangeKind(r["kind"]),
                time=r["changed_at"],
                before=r["version_before"] or "",
                after=r["version_after"] or "",
                who=r["who"] or "",
                link=r["link"] or "",
                source=r["source"] or "",
            )
            for r in rows
        ]
