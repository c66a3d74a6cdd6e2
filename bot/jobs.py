"""Investigations as jobs on a queue, for bots that outgrow one process: arq on Redis.

With `RCABOT_QUEUE` set to a redis:// URL, `rcabot serve` records a run (in the shared record,
storage.database) and enqueues it; `rcabot worker`, on this machine or another, takes it,
investigates, stores the trace and its audit, and publishes every progress event to the run's
Redis stream. The replica that holds the Slack thread reads that stream from its start, in
order, and narrates it as it would an investigation of its own.

- A worker killed mid-investigation: arq hands the job to another worker once the first one's
  in-progress mark lapses (the job's timeout plus ten seconds). The new attempt publishes
  `Restarted` first, so the thread says so; the verdict is posted once, by the thread's
  replica, when the stream says Finished.
- A run already stored as done is not run again by a later attempt.
- A bot replica killed mid-narration: each replica holds a lease on the threads it narrates
  (renewed every third of `RCABOT_RELAY_LEASE`) and records how far in the stream it got; a
  lapsed lease is taken by another replica, which goes on from there. The verdict is posted by
  whichever replica first marks it posted, once.
- Redis here keeps its queue in memory: a Redis restart loses queued jobs and their streams.
  The record (SQLite or PostgreSQL) keeps the run, so the loss is detected and repaired: a
  relay that hears nothing for `STALL` seconds asks arq for the job, and a job arq no longer
  knows is queued again from the record (`bot.desk.QUEUE_RETRIES` times), the thread told so.
  While Redis cannot be reached at all, the relay waits for it (`bot.desk.QUEUE_PATIENCE`),
  saying so in the thread; `rcabot worker` reconnects by itself. The ack of a new `/rca` never
  waits on Redis: the run is recorded and acked first, and queued from the thread's task.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.jobs import Job, JobStatus
from arq.worker import Worker, func
from redis.exceptions import RedisError

from bot.config import Settings
from bot.desk import Desk, Run
from bot.telemetry import Telemetry, telemetry_from
from rca.errors import RcaError
from rca.model import Window
from rca.search.events import Event, Finished, Restarted, event_from_json, event_to_json
from storage.investigations import Store

log = logging.getLogger("rcabot.jobs")
QUEUE = "rcabot:investigations"
STALL = 30.0  # seconds without progress before a relay asks whether its job still exists
STREAM_TTL = 24 * 3600  # a finished run's stream is kept this long for a late reader
MAX_TRIES = 3  # attempts of one investigation (a worker that dies takes one with it)


class JobLost(RcaError):
    """The queue no longer knows the job: Redis restarted, or the job expired unseen."""


def events_key(run_id: str) -> str:
    return f"rcabot:events:{run_id}"


@dataclass(frozen=True, slots=True)
class Progress:
    event: Event | None = None
    error: str = ""  # the investigation failed: why
    entry: str = ""  # its place in the run's stream, to resume after


class JobQueue:
    """The bot's side: enqueue a run, then follow its progress stream."""

    def __init__(self, url: str, *, stall: float = STALL) -> None:
        self.url = url
        self.stall = stall
        self._pool: ArqRedis | None = None

    async def _redis(self) -> ArqRedis:
        if self._pool is None:
            settings = dataclasses.replace(RedisSettings.from_dsn(self.url), conn_retries=0)  # the relay retries
            self._pool = await create_pool(settings, default_queue_name=QUEUE)
        return self._pool

    async def enqueue(self, run_id: str, *, alert_time: float | None = None) -> None:
        """Queue one investigation (a second enqueue of the same run id is ignored by arq)."""
        await (await self._redis()).enqueue_job("investigate", run_id, alert_time, _job_id=run_id)

    async def forget(self, run_id: str) -> None:
        """Drop what is left of a run's progress stream, before it is queued again."""
        await (await self._redis()).delete(events_key(run_id))

    async def progress(self, run_id: str, *, after: str = "") -> AsyncIterator[Progress]:
        """The run's progress from its first event (or after the entry `after`), in order,
        until it finishes or fails."""
        redis = await self._redis()
        key, last = events_key(run_id), after or "0-0"
        while True:
            batch = await redis.xread({key: last}, count=100, block=int(self.stall * 1000))
            if not batch:
                status = await Job(run_id, redis, _queue_name=QUEUE).status()
                if status is JobStatus.not_found:
                    raise JobLost(f"the job queue no longer holds investigation {run_id} (was Redis restarted?); "
                                  "run the command again")  # fmt: skip
                continue
            for entry, values in batch[0][1]:
                last = entry.decode() if isinstance(entry, bytes) else str(entry)
                doc = json.loads(values[b"doc"])
                p = Progress(event_from_json(doc["event"]) if doc.get("event") else None, str(doc.get("error", "")),
                             last)  # fmt: skip
                yield p
                if p.error or isinstance(p.event, Finished):
                    return

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None


# -- the worker's side -------------------------------------------------------------------------
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
        async for event in desk.investigate(Run(row.id, row.service, window, row.channel, row.user, row.created,
                                                incident)):  # fmt: skip
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
        redis_settings=RedisSettings.from_dsn(settings.queue), queue_name=QUEUE, max_jobs=settings.workers,
        job_timeout=timeout, keep_result=3600, ctx={"desk": desk}, handle_signals=False,
    )  # fmt: skip


async def serve_worker(settings: Settings, *, telemetry: Telemetry | None = None, stop: asyncio.Event,
                       reconnect: float = 1.0) -> None:  # fmt: skip
    """Run investigations from the queue until `stop` is set; a Redis that cannot be reached
    (down, restarted) is reconnected to, every `reconnect` seconds doubling up to 30, and a
    job it dropped is queued again by the relay that waits for it (bot.desk)."""
    if not settings.queue:
        raise RcaError("rcabot worker needs RCABOT_QUEUE, the redis:// URL the bot enqueues to")
    store = Store(settings.db, recover=False)  # the runs marked running are other workers' too
    tele = telemetry or telemetry_from(data=settings.data, now=settings.now, live=settings.live)
    desk = Desk.from_settings(settings, telemetry=tele, store=store)
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
                log.warning("the job queue cannot be reached (%s: %s); reconnecting in %.0f s",
                            type(exc).__name__, str(exc)[:200], delay)  # fmt: skip
            with suppress(OSError, RedisError):
                await w.close()
            if not stop.is_set():
                with suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                delay = min(delay * 2, 30.0)
    finally:
        desk.close()
        store.close()
