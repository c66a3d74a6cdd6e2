"""The bot's side of investigations run as jobs (bot.queue): a run enqueued, its progress stream
read in order from where its thread was told, under a lease on the thread that a replica that
dies lets lapse, and the verdict posted once by whichever replica first takes it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

from redis.exceptions import RedisError

from bot.queue import JobLost, JobQueue
from bot.verdicts import Run
from rca.errors import RcaError
from rca.search.events import Event, Restarted, Waiting
from storage.investigations import Store
from storage.rows import InvestigationRow

# A queue that lost a run (Redis restarted without persistence) is given it again this many
# times; one that cannot be reached is waited for this long (a broker restart takes seconds),
# retried every few seconds, before the run is failed with that reason.
QUEUE_RETRIES = 2
QUEUE_PATIENCE = 120.0
QUEUE_RECONNECT = 2.0


class Relay:
    def __init__(
        self, queue: JobQueue | None, *, store: Store, lease: float = 30.0, clock: Callable[[], float]
    ) -> None:
        self.queue = queue  # None: investigations run in this process and there is nothing to relay
        self.store = store
        self.lease = lease
        self.clock = clock
        self.replica = f"replica-{uuid.uuid4().hex[:12]}"  # this process, as the holder of relay leases

    async def stream(self, run: Run, *, resume: bool = False) -> AsyncIterator[Event]:
        """The run as a job: enqueued (unless another replica did and this one takes over its
        thread), then its progress stream read in order from where the thread was told, under
        a lease that a replica that dies lets lapse."""
        assert self.queue is not None
        store, lease = self.store, self.lease

        async def renew() -> None:
            while await self.claim(run.id):
                await asyncio.sleep(lease / 3)

        if not await self.claim(run.id):
            return  # another replica narrates it
        keeper = asyncio.create_task(renew())
        queue, enqueue, requeued = self.queue, not resume, 0
        down_since: float | None = None
        after = await asyncio.to_thread(store.relay_position, run.id) if resume else ""
        try:
            while True:
                try:
                    if enqueue:
                        await queue.enqueue(run.id, alert_time=run.incident.alert_time)
                        enqueue = False
                    async for p in queue.progress(run.id, after=after):
                        down_since = None
                        if keeper.done():  # the lease went to another replica: it goes on from here
                            return
                        await asyncio.to_thread(store.relayed, run.id, p.entry)  # before telling: never told twice
                        after = p.entry
                        if p.error:
                            raise RcaError(p.error)
                        if p.event is not None:
                            yield p.event
                    return
                except JobLost as exc:  # the queue lost it (Redis restarted): the record still has it
                    requeued += 1
                    if requeued > QUEUE_RETRIES:
                        await asyncio.to_thread(store.fail, run.id, str(exc))
                        raise
                    await queue.forget(run.id)
                    enqueue, after = True, ""
                    await asyncio.to_thread(store.relayed, run.id, "")  # the new stream is told from its start
                    yield Restarted(requeued + 1, "the job queue lost it (was Redis restarted?); queued again")
                except (OSError, RedisError) as exc:  # the queue cannot be reached: wait for it, a while
                    now = self.clock()
                    if down_since is None:
                        down_since = now
                        yield Waiting(
                            f"the job queue cannot be reached ({type(exc).__name__}); "
                            f"waiting up to {QUEUE_PATIENCE:.0f} s for it"
                        )
                    elif now - down_since > QUEUE_PATIENCE:
                        await asyncio.to_thread(store.fail, run.id, f"job queue unavailable: {exc}")
                        raise RcaError(
                            f"the job queue is unavailable ({type(exc).__name__}); run the command again"
                        ) from exc
                    await asyncio.sleep(QUEUE_RECONNECT)
        finally:
            keeper.cancel()

    async def claim(self, id: str) -> bool:
        """Take the lease on an investigation's thread (False: another replica has it)."""
        now = self.clock()
        return bool(await asyncio.to_thread(self.store.lease, id, owner=self.replica, until=now + self.lease, now=now))

    async def orphans(self) -> list[InvestigationRow]:
        """Queued investigations whose narrating replica stopped renewing its lease."""
        if self.queue is None:
            return []
        return await asyncio.to_thread(self.store.orphans, self.clock())

    async def take_posting(self, id: str) -> bool:
        """Whether this replica posts the verdict (always, without a job queue: one process)."""
        return self.queue is None or bool(await asyncio.to_thread(self.store.take_posting, id))
