"""Per-channel summary subscriptions in the bot's record (SQLite or PostgreSQL): when each
channel wants its daily summary, and the next time it is due, kept so that a restart across a
slot still posts.

Several bot processes may share the record. A slot is claimed by moving its `next_run` forward
with a compare-and-set (`... where next_run = <the value read>`), which the database
serialises: one process wins each slot, the others see no row changed and post nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage.database import Migration, open_database

TABLE = "summary_subscriptions"
MIGRATIONS = (
    Migration(
        1,
        (
            f"create table if not exists {TABLE} (channel {{text}} primary key, cron {{text}}, tz {{text}}, "
            f'next_run {{float}}, "user" {{text}}, created {{float}})',
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Subscription:
    channel: str
    cron: str
    tz: str
    next_run: float
    user: str  # who subscribed (or "" for the operator's RCABOT_SUMMARY_CHANNEL)


NextRun = Callable[[str, str, float], float]  # (cron, tz, after) -> the first slot strictly after


class SummarySchedule:
    """The subscriptions table; safe to share between threads and between processes."""

    def __init__(self, target: Path | str, next_run: NextRun) -> None:
        self._db = open_database(target)
        self._db.migrate("schedules", MIGRATIONS)
        self._next_run = next_run

    def close(self) -> None:
        self._db.close()

    def subscribe(
        self, channel: str, *, cron: str, tz: str, user: str, now: float | None = None, keep: bool = False
    ) -> Subscription:
        """Post this channel's summary on `cron` in `tz` from now on (replacing its earlier
        subscription, unless `keep`: then an existing one, and its due slot, stay)."""
        now = time.time() if now is None else now
        with self._db.transaction():
            existing = self._row(channel)
            if keep and existing is not None:
                return existing
            self._db.execute(
                f'insert into {TABLE} (channel, cron, tz, "user", next_run, created) values (?, ?, ?, ?, ?, ?) '
                "on conflict (channel) do update set cron = excluded.cron, tz = excluded.tz, "
                '"user" = excluded."user", next_run = excluded.next_run, created = excluded.created',
                [channel, cron, tz, user, self._next_run(cron, tz, now), now],
            )
            row = self._row(channel)
        assert row is not None
        return row

    def unsubscribe(self, channel: str) -> bool:
        return self._db.execute(f"delete from {TABLE} where channel = ?", [channel]) == 1

    def subscription(self, channel: str) -> Subscription | None:
        return self._row(channel)

    def all(self) -> list[Subscription]:
        return [_subscription(r) for r in self._db.query(f"select * from {TABLE} order by next_run")]

    def claim_due(self, now: float) -> list[Subscription]:
        """The subscriptions due at `now` that this process won: each one's `next_run` is moved
        to its first slot after `now` (slots missed while no process ran are posted once, not
        once per slot), and a process that lost the race for a slot gets nothing for it."""
        won: list[Subscription] = []
        for sub in self.all():
            if sub.next_run > now:
                continue
            following = self._next_run(sub.cron, sub.tz, max(now, sub.next_run))
            changed = self._db.execute(
                f"update {TABLE} set next_run = ? where channel = ? and next_run = ?",
                [following, sub.channel, sub.next_run],
            )
            if changed == 1:
                won.append(sub)
        return won

    def _row(self, channel: str) -> Subscription | None:
        rows = self._db.query(f"select * from {TABLE} where channel = ?", [channel])
        return _subscription(rows[0]) if rows else None


def _subscription(r: dict[str, object]) -> Subscription:
    return Subscription(
        str(r["channel"]),
        str(r["cron"]),
        str(r["tz"]),
        float(r["next_run"]),  # type: ignore[arg-type]
        str(r["user"] or ""),
    )
