"""The change feed in the bot: changes posted to `POST /changes` recorded off the event loop,
and read back, with those a live Prometheus records (rca.sources.prometheus_changes) and a
recording keeps, for the engine (each incident carries the changes around its window: rule
`changes`), `/rca changes`, the verdict's "What changed" and the thread's "what changed?"."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from bot import blockkit
from bot.config import Settings
from bot.telemetry import Telemetry
from handlers.fields import web_link
from rca.changes import LOOK_BACK, Change, known
from rca.errors import RcaError
from rca.model import Incident
from rca.sources.change_files import FileChanges
from rca.sources.prometheus_changes import PrometheusChanges
from rca.telemetry import Window
from storage.changes import ChangeStore
from storage.database import StorageError

log = logging.getLogger("rcabot.changes")
MAX_LISTED = 20
_ASKS = re.compile(
    r"\bwhat(?:'s| has| was)? changed\b|\bany changes?\b|\bchanges (?:to|in|of)\b|\bdeploy(?:s|ed|ments?)?\b|\brollouts?\b|\brolled out\b",
    re.I,
)


class ChangeSource(Protocol):
    what: str  # what it holds, as a note names it when it cannot be read

    async def changes(self, window: Window) -> list[Change]:
        """The changes recorded from before the window to its end."""
        ...


def asks_what_changed(question: str) -> bool:
    """A thread question about changes: "what changed?", "any deploys?", "changes to orders"."""
    return bool(_ASKS.search(question))


class Changes:
    def __init__(self, store: ChangeStore, telemetry: Telemetry, sources: Sequence[ChangeSource] = ()) -> None:
        self.store = store
        self.telemetry = telemetry
        self.sources = sources  # what records changes besides the webhook: Prometheus, a recording's file
        self._writes: set[asyncio.Task[None]] = set()

    def take(self, change: Change | None) -> None:
        """Record a posted change after the webhook has answered (None: a payload that records
        no change yet, a pending deployment or a failed sync)."""
        if change is None:
            return
        task = asyncio.get_running_loop().create_task(self._record(change))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _record(self, change: Change) -> None:
        try:
            await asyncio.to_thread(self.store.add, change)
        except StorageError as exc:  # the sender was answered already: the loss is logged, loudly
            log.error("a change to %s could not be recorded: %s", change.service[:60], exc)

    async def drain(self) -> None:
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    async def read(self, start: float, end: float) -> tuple[list[Change], list[str]]:
        """Every change in [start, end], recorded or read live, earliest first, and what could
        not be read."""
        missing: list[str] = []
        found: list[Change] = []
        try:
            found += await asyncio.to_thread(self.store.between, start, end)
        except StorageError as exc:
            log.warning("changes without the database: %s", exc)
            missing.append("the recorded changes (storage unavailable)")
        for source in self.sources:
            try:
                found += [c for c in await source.changes(Window(start, end)) if start <= c.time <= end]
            except (RcaError, OSError) as exc:
                log.warning("changes without %s: %s", source.what, exc)
                missing.append(f"{source.what} (unreadable)")
        unique = {(c.service, c.kind, c.time, c.after): c for c in found}
        return sorted(unique.values(), key=lambda c: (c.time, c.service)), missing

    async def around(self, window: Window, services: Sequence[str]) -> tuple[list[Change], int]:
        """The changes to `services` from LOOK_BACK before the window to its end, earliest first,
        and how many other services changed then."""
        found, _ = await self.read(window.start - LOOK_BACK, window.end)
        named = set(services)
        return [c for c in found if c.service in named], len({c.service for c in found} - named)

    async def listing(self, service: str, window_text: str, *, tz: str) -> str:
        """What changed in the window asked (to `service`, or to any service where it is empty),
        one line each, earliest first."""
        return await self.listing_for(service, await self.telemetry.window(window_text), tz=tz)

    async def listing_for(self, service: str, window: Window, *, tz: str) -> str:
        found, missing = await self.read(window.start, window.end)
        found = [c for c in found if not service or c.service == service]
        what = f"`{blockkit.plain(service)}`" if service else "any service"
        span = blockkit.window_text(window, tz)
        unread = f"\n⚠️ Not read: {'; '.join(missing)}." if missing else ""
        if not found:
            return (
                f"No change to {what} was recorded in {span}. Changes reach rcabot through `POST /changes`: "
                "a deploy marker, GitHub's deployment_status event or an Argo CD notification." + unread
            )
        lines = [f"*Changes to {what} in {span}:*"]
        for c in found[-MAX_LISTED:]:
            link = f" <{url}|link>" if (url := web_link(c.link)) else ""
            lines.append(f"• {blockkit.at(c.time, tz, near=window.end)} {blockkit.plain(c.describe())}{link}")
        if len(found) > MAX_LISTED:
            lines.insert(1, f"_{len(found) - MAX_LISTED} earlier change(s) not shown._")
        return "\n".join(lines) + unread


def change_feed(settings: Settings, telemetry: Telemetry, *, db: str | None = None) -> Changes:
    """The feed a configuration names: the record (RCABOT_DB, or `db`), a recording's files,
    a live Prometheus."""
    recorded: list[ChangeSource] = [FileChanges(settings.data)] if settings.data else []
    if settings.live.prometheus_url:
        recorded.append(PrometheusChanges(settings.live.prometheus_url, timeout=settings.live.timeout))
    return Changes(ChangeStore(db or settings.db), telemetry, recorded)


class ChangedTelemetry:
    """Telemetry whose incidents carry the changes the feed holds from LOOK_BACK before their
    window to its end, with those the recording itself keeps; a part of the feed that cannot be
    read is a note on the incident, not a failure."""

    def __init__(self, base: Telemetry, feed: Changes) -> None:
        self.base = base
        self.feed = feed

    async def now(self) -> float:
        return await self.base.now()

    async def services(self) -> tuple[str, ...]:
        return await self.base.services()

    async def window(self, text: str) -> Window:
        return await self.base.window(text)

    async def incident(self, service: str, window: Window) -> Incident:
        incident = await self.base.incident(service, window)
        found, missing = await self.feed.read(window.start - LOOK_BACK, window.end)
        unique = {(c.service, c.kind, c.time, c.after): c for c in (*incident.changes, *found)}
        return replace(
            incident,
            changes=known(unique.values(), window),
            notes=(*incident.notes, *(f"changes: {m} not read" for m in missing)),
        )
