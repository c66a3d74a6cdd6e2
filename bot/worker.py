"""The worker's side of the job queue (bot.queue): `rcabot worker` takes investigations from
Redis, runs each on its own desk (which stores the trace and its audit) and publishes every
progress event to the run's stream, which the thread's replica narrates (bot.relay)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import signal
from contextlib import suppress
from typing import Any

from arq.connections import ArqRedis, RedisSettings
from arq.worker import Worker, func
from redis.exceptions import RedisError

from bot.changes import ChangedTelemetry, change_feed
from bot.config import Settings
from bot.desk import Desk
from bot.queue import QUEUE, events_key
from bot.telemetry import Telemetry, telemetry_from
from bot.verdicts import Run
from rca.errors import RcaError
from rca.search.events import Finished, Restarted, event_to_json
from rca.telemetry import Window
from storage.investigations import Store

log = logging.getLogger("rcabot.worker")
STREAM_TTL = 24 * 3600  # a finished run's stream is kept this long for a late reader
MAX_TRIES = 3  # attempts of one investigation (a worker that dies takes one with it)


async def investigate(ctx: dict[str, Any], run_id: str, alert_time: float | None = None) -> str:
    """One investigation, run by a worker on its desk (which stores the trace and its audit),
    each progress event published to the run's stream."""
    desk: Desk = ctx["desk"]
    redis: ArqRedis = ctx["redis"]
    attempt = int(ctx.get("job_try", 1))
    key = events_key(run_id)

    async def publish(**doc: Any) -> None:
        await redis.xadd(key, {"doc": json.dumps({"attempt": attempt, **doc})})
        await redis.expire(key, STREAM_TTL)

    async def failed(exc: Exception) -> str:  # the investigation's own failure: said in the thread, not retried
        log.warning("investigation %s failed", run_id, exc_info=exc)
        await publish(error=f"{type(exc).__name__}: {exc}"[:500])
        return "failed"

    row = await asyncio.to_thread(desk.store.investigation, run_id)
    if row is None:
        log.warning("job %s names no recorded investigation", run_id[:40])
        return "unknown"
    if row.status == "done":  # a retry after the verdict was stored: the thread has it already
        await publish(event=event_to_json(Finished("already finished", row.trace or {})))
        return "done"
    if attempt > 1:
        await publish(event=event_to_json(Restarted(attempt, "the worker running it stopped; another took it up")))
    window = Window(row.window_start, row.window_end)
    try:
        incident = await desk.telemetry.incident(row.service, window)
    except Exception as exc:
        await asyncio.to_thread(desk.store.fail, run_id, f"{type(exc).__name__}: {exc}")
        return await failed(exc)
    if alert_time is not None and window.start <= alert_time <= window.end:
        incident = dataclasses.replace(incident, alert_time=alert_time)
    try:
        async for event in desk.investigate(
            Run(row.id, row.service, window, row.channel, row.user, row.created, incident)
        ):
            await publish(event=event_to_json(event))
    except Exception as exc:  # the desk has recorded it
        return await failed(exc)
    return "done"


def job_timeout(settings: Settings) -> float:
    """How long one attempt may take: the search's own time budget, its audit and a margin."""
    return settings.job_timeout or settings.time_budget + 60.0


def worker(settings: Settings, desk: Desk) -> Worker:
    """An arq worker running investigations from the queue on `desk`, `settings.workers` at a
    time; its caller (`serve_worker`) checks the settings, handles signals and closes the desk."""
    assert settings.queue
    timeout = job_timeout(settings)
    return Worker(
        functions=[func(investigate, name="investigate", max_tries=MAX_TRIES, timeout=timeout)],
        redis_settings=RedisSettings.from_dsn(settings.queue),
        queue_name=QUEUE,
        max_jobs=settings.workers,
        job_timeout=timeout,
        keep_result=3600,
        ctx={"desk": desk},
        handle_signals=False,
    )


async def serve_worker(
    settings: Settings, *, telemetry: Telemetry | None = None, stop: asyncio.Event, reconnect: float = 1.0
) -> None:
    """Run investigations from the queue until `stop` is set; a Redis that cannot be reached
    (down, restarted) is reconnected to, every `reconnect` seconds doubling up to 30, and a
    job it dropped is queued again by the relay that waits for it (bot.desk)."""
    if not settings.queue:
        raise RcaError("rcabot worker needs RCABOT_QUEUE, the redis:// URL the bot enqueues to")
    store = Store(settings.db, recover=False)  # the runs marked running are other workers' too
    tele = telemetry or telemetry_from(data=settings.data, now=settings.now, live=settings.live)
    desk = Desk.from_settings(settings, telemetry=ChangedTelemetry(tele, change_feed(settings, tele)), store=store)
    delay = reconnect
    try:
        while not stop.is_set():
            w = worker(settings, desk)
            running = asyncio.create_task(w.async_run())
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if stop.is_set():
                w.handle_sig(signal.SIGTERM)  # its jobs are cancelled: arq retries them on another worker
            try:
                await running
                delay = reconnect
            except asyncio.CancelledError:
                pass
            except (OSError, RedisError) as exc:
                log.warning(
                    "the job queue cannot be reached (%s: %s); reconnecting in %.0f s",
                    type(exc).__name__,
                    str(exc)[:200],
                    delay,
                )
            with suppress(OSError, RedisError):
                await w.close()
            if not stop.is_set():
                with suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                delay = min(delay * 2, 30.0)
    finally:
        desk.close()
        store.close()
