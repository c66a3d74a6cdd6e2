"""Per-channel summary subscriptions in the bot's SQLite file: when each channel wants its daily
summary, and the next time it is due, kept on disk so that a restart across a slot still posts.

Several bot processes may share the file. A slot is claimed by moving its `next_run` forward
with a compare-and-set (`... where next_run = <the value read>`), which SQLite serialises: one
process wins each slot, the others see no row changed and post nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage.database import open_database

TABLE = "summary_subscriptions"


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

    def __init__(self, path: Path | str, next_run: NextRun) -> None:
        self._db = open_database(Path(path))
        self._lock = threading.Lock()
        self._next_run = next_run
        if not self._db[TABLE].exists():  # type: ignore[union-attr]
            self._db.create_table(TABLE, {"channel": str, "cron": str, "tz": str, "next_run": float,
                                          "user": str, "created": float}, pk="channel")  # fmt: skip

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def subscribe(self, channel: str, *, cron: str, tz: str, user: str, now: float | None = None,
                  keep: bool = False) -> Subscription:  # fmt: skip
        """Post this channel's summary on `cron` in `tz` from now on (replacing its earlier
        subscription, unless `keep`: then an existing one, and its due slot, stay)."""
        now = time.time() if now is None else now
        with self._lock, self._db.conn:
            existing = self._row(channel)
            if keep and existing is not None:
                return existing
            self._db[TABLE].upsert({"channel": channel, "cron": cron, "tz": tz, "user": user,  # type: ignore[union-attr]
                                    "next_run": self._next_run(cron, tz, now), "created": now}, pk="channel")  # fmt: skip
            row = self._row(channel)
        assert row is not None
        return row

    def unsubscribe(self, channel: str) -> bool:
        with self._lock, self._db.conn:
            return self._db.execute(f"delete from {TABLE} where channel = ?", [channel]).rowcount == 1

    def subscription(self, channel: str) -> Subscription | None:
        with self._lock:
            return self._row(channel)

    def all(self) -> list[Subscription]:
        with self._lock:
            return [_subscription(r) for r in self._db[TABLE].rows_where(order_by="next_run")]  # type: ignore[union-attr]

    def claim_due(self, now: float) -> list[Subscription]:
        """The subscriptions due at `now` that this process won: each one's `next_run` is moved
        to its first slot after `now` (slots missed while no process ran are posted once, not
        once per slot), and a process that lost the race for a slot gets nothing for it."""
        won: list[Subscription] = []
        for sub in self.all():
            if sub.next_run > now:
                continue
            following = self._next_run(sub.cron, sub.tz, max(now, sub.next_run))
            with self._lock, self._db.conn:
                changed = self._db.execute(f"update {TABLE} set next_run = ? where channel = ? and next_run = ?",
                                           [following, sub.channel, sub.next_run]).rowcount  # fmt: skip
            if changed == 1:
                won.append(sub)
        return won

    def _row(self, channel: str) -> Subscription | None:
        rows = list(self._db[TABLE].rows_where("channel = ?", [channel]))  # type: ignore[union-attr]
        return _subscription(rows[0]) if rows else None


def _subscription(r: dict[str, object]) -> Subscription:
    return Subscription(str(r["channel"]), str(r["cron"]), str(r["tz"]), float(r["next_run"]),  # type: ignore[arg-type]
                        str(r["user"] or ""))  # fmt: skip
