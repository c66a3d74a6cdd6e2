"""Investigations as jobs on a queue, for bots that outgrow one process: arq on Redis. This
module is the queue's client (the bot's side); bot.worker runs the jobs, bot.relay narrates them.

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
  knows is queued again from the record (`bot.relay.QUEUE_RETRIES` times), the thread told so.
  While Redis cannot be reached at all, the relay waits for it (`bot.relay.QUEUE_PATIENCE`),
  saying so in the thread; `rcabot worker` reconnects by itself. The ack of a new `/rca` never
  waits on Redis: the run is recorded and acked first, and queued from the thread's task.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.jobs import Job, JobStatus

from rca.errors import RcaError
from rca.search.events import Event, Finished, event_from_json

QUEUE = "rcabot:investigations"
STALL = 30.0  # seconds without progress before a relay asks whether its job still exists


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
                    raise JobLost(
                        f"the job queue no longer holds investigation {run_id} (was Redis restarted?); "
                        "run the command again"
                    )
                continue
            for entry, values in batch[0][1]:
                last = entry.decode() if isinstance(entry, bytes) else str(entry)
                doc = json.loads(values[b"doc"])
                p = Progress(
                    event_from_json(doc["event"]) if doc.get("event") else None, str(doc.get("error", "")), last
                )
                yield p
                if p.error or isinstance(p.event, Finished):
                    return

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
