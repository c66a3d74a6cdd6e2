"""The on-call desk: starts investigations and tracks the running ones. What it hands the
fronts is in bot.verdicts; reading a stored investigation back is bot.casebook's, the thread's
answers (repair, verification, marks, questions, charts) bot.followups', and relaying runs
that go to a job queue bot.relay's.

Slack-agnostic: the Slack front and the terminal console both drive it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable

from bot.casebook import Casebook
from bot.config import Settings
from bot.followups import FollowUps
from bot.queue import JobQueue
from bot.relay import Relay
from bot.telemetry import Telemetry
from bot.verdicts import AlreadyRunning, Run, Summary
from rca.calibration import trace_features
from rca.engines import build_engine
from rca.engines.lats import SearchEngine
from rca.errors import InputError
from rca.reasoners import Reasoner
from rca.reasoners.offline import OfflineReasoner
from rca.replay import suggest
from rca.search.events import Event, Finished
from rca.star.memory import RepairMemory
from rca.telemetry import Window
from storage.database import StorageError
from storage.investigations import Store
from storage.rows import InvestigationRow

log = logging.getLogger("rcabot.desk")

SERVICE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/")


class Desk:
    def __init__(
        self,
        *,
        telemetry: Telemetry,
        store: Store,
        memory: RepairMemory | None = None,
        engine: str = "lats",
        workers: int = 2,
        reasoner: Reasoner | None = None,
        time_budget: float | None = None,
        read_budget: int | None = None,
        clock: Callable[[], float] = time.time,
        queue: JobQueue | None = None,
        relay_lease: float = 30.0,
    ) -> None:
        if not isinstance(build_engine(engine), SearchEngine):  # a bad name fails now, not on the first /rca
            raise InputError(f"engine {engine!r} gives no four-stage trace; the bot needs lats, linear or linear-multi")
        self.telemetry = telemetry
        self.store = store
        self.engine = engine
        self.reasoner = reasoner or OfflineReasoner()
        self.time_budget = time_budget
        self.read_budget = read_budget
        self.clock = clock
        self.workers = workers
        self.queue = queue  # set: investigations run as jobs on worker processes (bot.worker)
        self.casebook = Casebook(telemetry=telemetry, store=store, workers=workers)
        self.followups = FollowUps(self.casebook, telemetry=telemetry, reasoner=self.reasoner, memory=memory)
        self.relay = Relay(queue, store=store, lease=relay_lease, clock=clock)
        self._running: dict[str, Run] = {}
        self._opening: set[tuple[str, str]] = set()  # (service, channel) being validated

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        telemetry: Telemetry,
        store: Store,
        memory: RepairMemory | None = None,
        queue: JobQueue | None = None,
    ) -> Desk:
        """The desk the settings describe (the bot's, or a job-queue worker's)."""
        return cls(
            telemetry=telemetry,
            store=store,
            memory=memory,
            engine=settings.engine,
            workers=settings.workers,
            reasoner=settings.build_reasoner(),
            time_budget=settings.time_budget,
            read_budget=settings.read_budget,
            queue=queue,
            relay_lease=settings.relay_lease,
        )

    def close(self) -> None:  # the job queue's connections close with the loop that made them
        self.casebook.close()

    # -- starting ----------------------------------------------------------------------------
    async def open(
        self, service: str, window_text: str, *, channel: str, user: str, alert_time: float | None = None
    ) -> Run:
        """Validate a request and record a new investigation; InputError says what is wrong.
        `alert_time`: when an alert says the symptom began (the engine places evidence by it)."""
        if not service or len(service) > 200 or not set(service) <= SERVICE_CHARS:
            raise InputError(f"{service[:60]!r} is not a service name")
        key = (service, channel)
        if key in self._opening or self.running_for(service, channel) is not None:
            raise AlreadyRunning(self.running_for(service, channel), service)
        self._opening.add(key)  # checked and taken with no await between: one run per key
        try:
            window = await self.telemetry.window(window_text)
            known = await self.telemetry.services()
            if service not in known:
                raise InputError(f"unknown service {service!r}.{suggest(service, known)}")
            incident = await self.telemetry.incident(service, window)
            if alert_time is not None and window.start <= alert_time <= window.end:
                incident = dataclasses.replace(incident, alert_time=alert_time)
            run = Run(f"inv-{uuid.uuid4().hex[:12]}", service, window, channel, user, self.clock(), incident)
            await asyncio.to_thread(
                self.store.start,
                id=run.id,
                service=service,
                window=(window.start, window.end),
                channel=channel,
                user=user,
                engine=self.engine,
            )
            self._running[run.id] = run
        finally:
            self._opening.discard(key)
        self.casebook.remember(run.id, incident)
        return run

    async def reopen(self, id: str, *, user: str) -> Run:
        """A new run over the same service, window and channel as an earlier investigation."""
        row = await self.casebook.row(id)
        window = Window(row.window_start, row.window_end)
        return await self.open(row.service, window.to_iso(), channel=row.channel, user=user)

    def running(self, channel: str | None = None) -> list[Run]:
        return [r for r in self._running.values() if channel is None or r.channel == channel]

    def running_for(self, service: str, channel: str) -> Run | None:
        return next((r for r in self._running.values() if r.service == service and r.channel == channel), None)

    def queued_ahead(self) -> int:
        """How many investigations wait for a worker."""
        return max(0, len(self._running) - self.workers)

    # -- investigating -----------------------------------------------------------------------
    async def investigate(self, run: Run, *, resume: bool = False) -> AsyncIterator[Event]:
        """The run's progress events as the engine produces them, ending with Finished; the
        trace and its audit are stored before Finished is yielded (by the worker, when a job
        queue runs it)."""
        if self.queue is not None:
            try:
                async for event in self.relay.stream(run, resume=resume):
                    yield event
            finally:
                self._running.pop(run.id, None)
            return
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()

        def put(item: Event | BaseException | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            engine = build_engine(
                self.engine, reasoner=self.reasoner, time_budget=self.time_budget, read_budget=self.read_budget
            )
            assert isinstance(engine, SearchEngine)

            async def drive() -> None:
                async for event in engine.stream(run.incident):
                    put(event)

            try:
                asyncio.run(drive())
            except BaseException as exc:  # handed to the awaiting side, which reports it
                put(exc)
            put(None)

        try:
            async with self.casebook.slots:
                future = self.casebook.submit(work)
                while (item := await queue.get()) is not None:
                    if isinstance(item, BaseException):
                        raise item
                    if isinstance(item, Finished):
                        _, verdict_audit = await self.casebook.audited(run.incident, dict(item.trace))
                        await asyncio.to_thread(
                            self.store.finish,
                            run.id,
                            trace=dict(item.trace),
                            audit=verdict_audit.to_json(),
                            calibration=trace_features(item.trace).to_json(),
                        )
                    yield item
                await future
        except BaseException as exc:
            try:
                await asyncio.to_thread(self.store.fail, run.id, f"{type(exc).__name__}: {exc}")
            except StorageError:  # the database is what failed: the run is marked interrupted on restart
                log.warning("could not record investigation %s as failed", run.id, exc_info=True)
            raise
        finally:
            self._running.pop(run.id, None)

    def release(self, id: str) -> None:
        self._running.pop(id, None)

    async def adopt(self, row: InvestigationRow) -> Run:
        """A run for an investigation another replica was narrating, to go on with it here."""
        run = Run(
            row.id,
            row.service,
            Window(row.window_start, row.window_end),
            row.channel,
            row.user,
            row.created,
            await self.casebook.incident(row),
        )
        self._running[run.id] = run
        return run

    async def summary(self, *, start: float, end: float, channel: str) -> Summary:
        """One channel's investigations in a time range, with their repairs and feedback."""
        rows = await asyncio.to_thread(lambda: self.store.between(start, end, channel=channel))
        ids = [r.id for r in rows]
        repaired = await asyncio.to_thread(self.store.repaired_among, ids)
        feedback = await asyncio.to_thread(self.store.last_feedback, ids)
        return Summary(start, end, tuple(rows), frozenset(repaired), feedback)

    async def thread_investigation(self, channel: str, thread_ts: str) -> InvestigationRow | None:
        return await asyncio.to_thread(self.store.by_thread, channel, thread_ts)

    async def set_thread(self, id: str, *, parent_ts: str, thread_ts: str) -> None:
        await asyncio.to_thread(self.store.set_thread, id, parent_ts=parent_ts, thread_ts=thread_ts)
