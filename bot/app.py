"""The slack-bolt AsyncApp: wiring, the once-only delivery guard, the error handler, and
`rcabot serve` (Socket Mode with SLACK_APP_TOKEN, else HTTP on PORT at /slack/events)."""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import parse_body
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot import scheduler
from bot.alerts import Alerts, load_routes
from bot.changes import ChangedTelemetry, Changes, change_feed
from bot.config import Settings, require_slack
from bot.desk import Desk
from bot.front import SlackFront
from bot.queue import JobQueue
from bot.runbooks import load_runbooks
from bot.telemetry import Telemetry, telemetry_from
from handlers import actions, commands, events
from handlers.alerts import alertmanager_webhook
from handlers.changes import MAX_BODY as MAX_CHANGE
from handlers.changes import parse_change
from handlers.payloads import well_formed
from handlers.webhooks import json_webhook
from storage.alerts import AlertStore
from storage.database import StorageError
from storage.investigations import Store
from storage.repair_memory import SqlRepairMemory
from storage.schedules import SummarySchedule

log = logging.getLogger("rcabot")
EVENTS_PATH = "/slack/events"
ALERTS_PATH = "/alerts/alertmanager"
CHANGES_PATH = "/changes"


@dataclass
class Bot:
    """Everything `rcabot serve` runs, so tests and benchmarks can start the same thing."""

    app: AsyncApp
    front: SlackFront
    desk: Desk
    store: Store
    memory: SqlRepairMemory
    schedule: SummarySchedule
    alerts: Alerts
    changes: Changes
    errors: list[BaseException]  # what reached the app's error handler (a bug, or a dependency failing)
    signing_secret: str = ""
    alert_auth: tuple[str, ...] = ()  # the Authorization headers the alert and change webhooks accept; none: off

    def close(self) -> None:
        self.desk.close()
        self.store.close()
        self.memory.close()
        self.schedule.close()
        self.alerts.store.close()
        self.changes.store.close()


def web_client(settings: Settings) -> AsyncWebClient:
    client = AsyncWebClient(token=settings.bot_token, base_url=_base_url(settings.api_url), timeout=15)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=3))  # honours Retry-After
    client.retry_handlers.append(AsyncServerErrorRetryHandler(max_retry_count=2))  # Slack's 5xx, with backoff
    return client


def _base_url(url: str) -> str:
    if not url:
        return AsyncWebClient.BASE_URL
    return url if url.endswith("/") else url + "/"


def build_bot(settings: Settings, *, telemetry: Telemetry | None = None, stream_interval: float = 1.0) -> Bot:
    """The app with its listeners, over a desk reading the configured telemetry."""
    if not settings.socket_mode:
        require_slack(settings)
    store = Store(settings.db, recover=not settings.queue)  # with a queue, running ones are the workers'
    memory = SqlRepairMemory(settings.db)  # the same file, its own table
    schedule = SummarySchedule(settings.db, scheduler.next_run)  # and another
    if settings.summary_channel:  # the operator's channel, unless it already has a schedule of its own
        schedule.subscribe(
            settings.summary_channel, cron=settings.summary_cron, tz=settings.summary_tz, user="", keep=True
        )
    telemetry = telemetry or telemetry_from(data=settings.data, now=settings.now, live=settings.live)
    changes = change_feed(settings, telemetry)
    queue = JobQueue(settings.queue) if settings.queue else None
    desk = Desk.from_settings(
        settings, telemetry=ChangedTelemetry(telemetry, changes), store=store, memory=memory, queue=queue
    )
    alert_store = AlertStore(settings.db)
    client = web_client(settings)
    app = AsyncApp(
        client=client,
        signing_secret=settings.signing_secret or None,
        request_verification_enabled=bool(settings.signing_secret) or not settings.socket_mode,
    )
    front = SlackFront(
        desk,
        client,
        stream_interval=stream_interval,
        allowed_channels=settings.allowed_channels,
        allowed_users=settings.allowed_users,
        thread_questions=settings.thread_questions,
        schedule=schedule,
        runbooks=load_runbooks(settings.runbooks),
        alerts=alert_store,
        changes=changes,
    )

    @app.middleware
    async def once(body: dict[str, Any], next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        """Slack redelivers what it thinks was missed: a delivery seen before starts nothing."""
        key = body.get("event_id") or body.get("trigger_id")
        try:
            first = not key or await asyncio.to_thread(store.first_delivery, str(key)[:200])
        except StorageError as exc:  # the listener says so to the user; a retry cannot be told apart now
            log.error("storage unavailable, a delivery goes on unchecked for repeats: %s", exc)
            first = True
        if not first:
            log.info("ignored a repeated delivery %s", str(key)[:40])
            return BoltResponse(status=200, body="")
        await next()
        return None

    errors: list[BaseException] = []

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        errors.append(error)
        log.error("unhandled error in a listener (%s)", str(body.get("type") or "")[:40], exc_info=error)

    commands.register(app, front)
    actions.register(app, front)
    events.register(app, front)
    alerts = Alerts(
        front, alert_store, load_routes(settings.alert_routes), per_minute=settings.alert_threads_per_minute
    )
    return Bot(
        app,
        front,
        desk,
        store,
        memory,
        schedule,
        alerts,
        changes,
        errors,
        settings.signing_secret,
        alert_auth=_alert_auth(settings),
    )


def _alert_auth(settings: Settings) -> tuple[str, ...]:
    """What Alertmanager's http_config sends: `Authorization: Bearer <token>` or basic auth."""
    accepted = []
    if settings.alert_token:
        accepted.append(f"Bearer {settings.alert_token}")
    if settings.alert_basic:
        accepted.append("Basic " + base64.b64encode(settings.alert_basic.encode()).decode())
    return tuple(accepted)


async def start_http(bot: Bot, *, host: str, port: int, events: bool = True) -> web.AppRunner:
    """Serve the app over HTTP: signed requests at /slack/events (unless `events` is False, as
    in Socket Mode) and a health check at /healthz. A signed request whose payload has not the
    shape Slack gives it gets 400 before Bolt routes it."""
    webapp = web.Application(client_max_size=2 * 1024 * 1024)
    verifier = SignatureVerifier(bot.signing_secret) if bot.signing_secret else None

    async def slack_events(request: web.Request) -> web.Response:
        raw = await request.text()
        signed = verifier is not None and verifier.is_valid(
            raw, request.headers.get("X-Slack-Request-Timestamp", ""), request.headers.get("X-Slack-Signature", "")
        )
        if signed:  # Bolt reads the payload as it builds its request: refuse what would break it
            try:
                body = parse_body(raw, request.content_type)
            except ValueError:
                body = None
            if not well_formed(body):
                return web.Response(status=400, text="malformed payload")
        bolt_request = AsyncBoltRequest(body=raw, query=request.query_string, headers=request.headers)  # type: ignore[arg-type]
        return await to_aiohttp_response(await bot.app.async_dispatch(bolt_request))

    if events:
        webapp.router.add_post(EVENTS_PATH, slack_events)

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"ok": True, "running": len(bot.desk.running())})

    webapp.router.add_get("/healthz", health)

    webapp.router.add_post(ALERTS_PATH, alertmanager_webhook(bot.alert_auth, bot.alerts.take))
    webapp.router.add_post(
        CHANGES_PATH,
        json_webhook(
            bot.alert_auth, functools.partial(parse_change, now=time.time), bot.changes.take, max_body=MAX_CHANGE
        ),
    )
    runner = web.AppRunner(webapp, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


async def serve(settings: Settings, *, host: str = "0.0.0.0") -> None:
    """`rcabot serve`: run until SIGTERM or SIGINT, then stop taking requests and give running
    investigations `shutdown_grace` seconds to finish; what is still running then is marked
    interrupted at the next start, and its thread gets a button to resume it."""
    bot = build_bot(settings)
    await bot.desk.telemetry.services()  # load the telemetry before the first /rca, not during it
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(bot.front.announce_recovered()), asyncio.create_task(bot.front.run_summaries())]
    if settings.queue:  # threads another replica stopped narrating
        tasks.append(asyncio.create_task(bot.front.adopt_orphans()))
    runner = await start_http(bot, host=host, port=settings.port, events=not settings.socket_mode)
    socket_mode = None
    try:
        if settings.socket_mode:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            socket_mode = AsyncSocketModeHandler(bot.app, settings.app_token)
            await socket_mode.connect_async()
            log.warning("rcabot serving over Socket Mode (health check on port %d)", settings.port)
        else:
            log.warning("rcabot serving HTTP on port %d at %s", settings.port, EVENTS_PATH)
        await stop.wait()
        log.warning("stopping: no new requests; %d investigation(s) running", len(bot.desk.running()))
        if socket_mode is not None:
            await socket_mode.close_async()
        await runner.cleanup()  # no new requests ...
        await _drain(bot, settings.shutdown_grace)  # ... while running work finishes
        await bot.changes.drain()  # and the changes already answered for are recorded
    finally:
        if runner.server is not None:
            await runner.cleanup()
        for t in tasks:
            t.cancel()
        bot.close()


async def _drain(bot: Bot, grace: float) -> None:
    """Wait for running investigations, at most `grace` seconds."""
    deadline = asyncio.get_running_loop().time() + grace
    while bot.desk.running() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
    left = bot.desk.running()
    if left:
        log.warning("%d investigation(s) left running: they are offered for resuming at the next start", len(left))
