"""Investigations that Alertmanager starts: routing a notification to a channel, one thread per
alert group, repeated notifications appended, resolution recorded, storms folded.

`RCABOT_ALERT_ROUTES` is a YAML file; the first route whose matchers all hold takes the alert:

```yaml
routes:
  - match: {team: orders}                 # label equals value
    match_re: {severity: "critical|page"} # label fully matches the regular expression
    channel: C0ORDERS
    service_label: service                # the label naming the service (default: service)
default:                                   # optional: whatever no route took
  channel: C0ONCALL
```
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from slack_sdk.errors import SlackApiError

from bot import blockkit
from bot.front import SlackFront
from handlers.alerts import Notification
from rca.errors import InputError
from storage.alerts import AlertStore

log = logging.getLogger("rcabot.alerts")

_CHANNEL = re.compile(r"^[CG][A-Z0-9]{2,30}$")
_LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
BEFORE = 600.0  # seconds of the window before the alert began: the engine's view of "before"
LONGEST = 6 * 3600.0  # an alert firing for longer is investigated over its last six hours


@dataclass(frozen=True, slots=True)
class Route:
    channel: str
    service_label: str = "service"
    match: Mapping[str, str] = field(default_factory=dict)
    match_re: Mapping[str, re.Pattern[str]] = field(default_factory=dict)

    def takes(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match.items()) and all(
            p.fullmatch(labels.get(k, "")) is not None for k, p in self.match_re.items()
        )


@dataclass(frozen=True, slots=True)
class AlertRoutes:
    routes: tuple[Route, ...] = ()
    default: Route | None = None

    def route(self, labels: Mapping[str, str]) -> Route | None:
        return next((r for r in self.routes if r.takes(labels)), self.default)


def load_routes(path: Path | None) -> AlertRoutes:
    """The routes file, or InputError naming what is wrong with it."""
    if path is None:
        return AlertRoutes()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"RCABOT_ALERT_ROUTES: cannot read {path.name}: {type(exc).__name__}") from None
    if not isinstance(data, dict) or set(data) - {"routes", "default"}:
        raise InputError("RCABOT_ALERT_ROUTES: expected `routes:` (a list) and optionally `default:`")
    routes = data.get("routes") or []
    if not isinstance(routes, list):
        raise InputError("RCABOT_ALERT_ROUTES: `routes` must be a list")
    default = data.get("default")
    return AlertRoutes(
        tuple(_route(r, f"routes[{i}]") for i, r in enumerate(routes)),
        _route(default, "default", matchers=False) if default is not None else None,
    )


def _route(entry: object, where: str, *, matchers: bool = True) -> Route:
    where = f"RCABOT_ALERT_ROUTES: {where}"
    known = {"channel", "service_label"} | ({"match", "match_re"} if matchers else set())
    if not isinstance(entry, dict) or set(entry) - known:
        raise InputError(f"{where} must map {', '.join(sorted(known))}")
    channel = entry.get("channel")
    if not isinstance(channel, str) or not _CHANNEL.match(channel):
        raise InputError(f"{where}: channel must be a channel id such as C0123ABC")
    label = entry.get("service_label", "service")
    if not isinstance(label, str) or not _LABEL.match(label):
        raise InputError(f"{where}: service_label must be a label name")
    match = _matchers(entry.get("match") or {}, f"{where}.match")
    try:
        match_re = {k: re.compile(v) for k, v in _matchers(entry.get("match_re") or {}, f"{where}.match_re").items()}
    except re.error as exc:
        raise InputError(f"{where}.match_re: not a regular expression ({exc})") from None
    return Route(channel, label, match, match_re)


def _matchers(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and _LABEL.match(k) and isinstance(v, str) and len(v) <= 500 for k, v in value.items()
    ):
        raise InputError(f"{where} must map label names to text")
    return dict(value)


class Alerts:
    """What the webhook hands over after it has answered Alertmanager: each notification is
    routed, its group opened once, repeated or resolved in its thread; new threads are limited
    per channel and minute, the rest folded into one "more alerts" line."""

    def __init__(
        self,
        front: SlackFront,
        store: AlertStore,
        routes: AlertRoutes,
        *,
        per_minute: int = 10,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.front = front
        self.store = store
        self.routes = routes
        self.per_minute = per_minute
        self.clock = clock
        self._opened: dict[str, list[float]] = {}  # channel -> when its recent threads opened
        self._folded: dict[
            str, tuple[float, str, tuple[str, ...]]
        ] = {}  # channel -> (minute began, message ts, groups)
        self._fold_locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[str, deque[Notification]] = {}  # group key -> notifications not yet handled

    def take(self, n: Notification) -> None:
        """Handle a notification in the background (the webhook has already answered). One
        group's notifications are handled one after another, in the order they came (a
        resolution never overtakes the firing it ends), by one task per group."""
        waiting = self._pending.get(n.group_key)
        if waiting is not None:  # that group's task takes it next
            waiting.append(n)
            return
        self._pending[n.group_key] = deque([n])
        task = asyncio.create_task(self._group(n.group_key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _group(self, key: str) -> None:
        waiting = self._pending[key]
        try:
            while waiting:
                n = waiting.popleft()
                # each notification carries all of its group's current alerts, so a later firing one
                # supersedes those still waiting: the thread hears the latest once, the count keeps all
                superseded = 0
                while n.status == "firing" and waiting and waiting[0].status == "firing":
                    n, superseded = waiting.popleft(), superseded + 1
                await self._handle(n)
                if superseded:  # counted once the group is claimed: a first notification superseded is no loss
                    await asyncio.to_thread(self.store.notified, key, superseded)
        finally:
            del self._pending[key]

    async def drain(self) -> None:
        """Until every notification taken is handled and every investigation it started is done."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self.front.finish_alert_runs()

    async def _handle(self, n: Notification) -> None:
        try:
            await self.receive(n)
        except Exception:  # the edge of a background job: one bad notification stops nothing else
            log.exception("alert group %s failed", n.group_key[:80])

    async def receive(self, n: Notification) -> None:
        route = self.routes.route(n.labels)
        if route is None:
            await asyncio.to_thread(self.store.unrouted, n.labels)
            log.warning("an alert matched no route and there is no default: %s", n.labels.get("alertname", "")[:80])
            return
        if n.status == "resolved":
            await self._resolved(n)
            return
        service = n.labels.get(route.service_label) or next(
            (a.labels[route.service_label] for a in n.alerts if route.service_label in a.labels), ""
        )
        claimed = await asyncio.to_thread(
            self.store.claim, n.group_key, channel=route.channel, service=service, labels=n.labels, fired=n.fired
        )
        thread = ""
        if not claimed:
            if not await asyncio.to_thread(self.store.refire, n.group_key, n.fired):
                await self._again(n)
                return
            group = await asyncio.to_thread(self.store.group, n.group_key)  # it resolved, and fires again
            thread = group.thread_ts if group is not None else ""
        await asyncio.to_thread(self.store.tell, n.group_key, {a.fingerprint for a in n.alerts})
        if not self._room(route.channel):
            await asyncio.to_thread(self.store.fold, n.group_key)
            await self._fold(route.channel, n)
            return
        now = self.clock()
        reach = min(LONGEST, max(0.0, now - n.fired) + BEFORE)
        links = (("graph", n.graph_url), ("runbook", n.runbook_url), ("silence", n.silence_url))
        ts, investigation = await self.front.investigate_alert(
            channel=route.channel,
            service=service,
            service_label=route.service_label,
            headline=n.summary,
            alerts=len(n.alerts),
            reach=reach,
            began_ago=max(0.0, now - n.fired),
            severity=n.severity,
            links=tuple((label, url) for label, url in links if url),
            thread_ts=thread,
        )
        await asyncio.to_thread(self.store.opened, n.group_key, thread_ts=ts, investigation=investigation)

    def _room(self, channel: str) -> bool:
        now = self.clock()
        recent = [t for t in self._opened.get(channel, []) if now - t < 60]
        if len(recent) >= self.per_minute:
            self._opened[channel] = recent
            return False
        self._opened[channel] = [*recent, now]
        return True

    async def _fold(self, channel: str, n: Notification) -> None:
        async with self._fold_locks.setdefault(channel, asyncio.Lock()):  # one line a minute, updated in turn
            now = self.clock()
            began, ts, names = self._folded.get(channel, (now, "", ()))
            if now - began >= 60:
                began, ts, names = now, "", ()
            name = n.labels.get("alertname", "alert")
            service = next((n.labels[k] for k in ("service", "app", "job") if k in n.labels), "")
            names = (*names, f"{name} ({service})" if service else name)
            ts = await self._folded_line(channel, ts=ts, names=names)
            self._folded[channel] = (began, ts, names)

    async def _note(self, channel: str, thread_ts: str, text: str) -> None:
        await self.front.poster.post(channel, thread_ts, text, [blockkit.context(text)])

    async def _folded_line(self, channel: str, *, ts: str, names: tuple[str, ...]) -> str:
        """The channel's one line for alerts beyond its threads a minute, naming them: posted,
        then updated."""
        shown = ", ".join(blockkit.plain(n[:80]) for n in names[:10]) + (
            f" and {len(names) - 10} more" if len(names) > 10 else ""
        )
        text = (
            f"🔕 {len(names)} more alert group(s) grouped here: {shown}. This channel opens at most "
            f"{self.per_minute} investigation threads a minute; `/rca <service>` investigates one by hand."
        )
        client = self.front.client
        try:
            if ts:
                await client.chat_update(channel=channel, ts=ts, text=text, blocks=[blockkit.context(text)])
                return ts
            posted = await client.chat_postMessage(channel=channel, text=text, blocks=[blockkit.context(text)])
            return str(posted["ts"])
        except SlackApiError as exc:
            log.warning("cannot tell %s of folded alerts: %s", channel[:40], exc.response.get("error"))
            return ts

    async def _again(self, n: Notification) -> None:
        await asyncio.to_thread(self.store.notified, n.group_key)
        group = await asyncio.to_thread(self.store.group, n.group_key)
        told = await asyncio.to_thread(self.store.tell, n.group_key, {a.fingerprint for a in n.alerts})
        new = [a for a in n.alerts if a.fingerprint in told]
        if group is not None and group.thread_ts and new:  # told when alerts join, counted otherwise
            await self._note(
                group.channel,
                group.thread_ts,
                f"🔔 Alertmanager again: {len(n.alerts)} alert(s) firing in this group, {len(new)} new — {n.summary}",
            )

    async def _resolved(self, n: Notification) -> None:
        ended = max((a.ends_at or 0.0 for a in n.alerts), default=0.0) or self.clock()
        if not await asyncio.to_thread(self.store.resolve, n.group_key, ended):
            return  # never seen firing, or resolved already: nothing to tell
        group = await asyncio.to_thread(self.store.group, n.group_key)
        if group is not None and group.thread_ts:
            took = max(0.0, ended - group.fired)
            await self._note(
                group.channel,
                group.thread_ts,
                f"✅ Resolved: Alertmanager says the alert ended, {took / 60:.0f} min after it began.",
            )
