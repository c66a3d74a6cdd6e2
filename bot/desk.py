"""The on-call desk: starts investigations, tracks the running ones, and follows them up
(audit, repair, verification, feedback, questions, charts, the daily summary).

Slack-agnostic: the Slack front and the terminal console both drive it. The engine's CPU work
runs in a small pool of worker threads, each with its own event loop, so the application's
loop stays free to acknowledge Slack within its three seconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from redis.exceptions import RedisError

from bot.charts import signal_chart
from bot.telemetry import Telemetry
from rca.calibration import Calibration, Features, features, shipped, trace_features
from rca.decision import tied
from rca.engines import build_engine
from rca.engines.lats import SearchEngine
from rca.errors import InputError, RcaError
from rca.evidence.toolbox import Toolbox
from rca.explain import Answer, ChartRequest, answer, entities_of, grounding, parse_question
from rca.model import Incident, Modality, Window
from rca.reasoners import Reasoner
from rca.reasoners.claude import ClaudeReasoner
from rca.reasoners.offline import OfflineReasoner
from rca.replay import suggest
from rca.search.events import Event, Finished, Restarted, Waiting
from rca.sources.protocols import MetricQuery
from rca.star.audit import Audit, audit
from rca.star.context import audit_context
from rca.star.criteria import AuditContext
from rca.star.memory import Pattern, RepairMemory, RepairRecord
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, RepairResult, RepairStep, repair
from rca.star.verify import VerificationRun, run_tests
from rca.trace import Trace, from_json, to_json
from storage.database import StorageError
from storage.investigations import InvestigationRow, Store

log = logging.getLogger("rcabot.desk")
if TYPE_CHECKING:  # bot.jobs runs its jobs on a Desk: it imports this module
    from bot.config import Settings
    from bot.jobs import JobQueue

SERVICE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/")


@dataclass(frozen=True, slots=True)
class Run:
    """One investigation the desk has started."""

    id: str
    service: str
    window: Window
    channel: str
    user: str
    started: float
    incident: Incident = field(repr=False, compare=False)


class AlreadyRunning(InputError):
    """An investigation of this service is already running in this channel."""

    def __init__(self, run: Run | None, service: str) -> None:
        super().__init__(f"an investigation of {service} is already running here")
        self.run = run


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a verdict's trust (rca.star.audit.Audit.trust) stands among the bot's earlier
    verdicts. The audit orders verdicts well by how likely they are wrong, but no principle
    sets a trust value below which one is: so the bot flags the quarter of its verdicts it
    trusts least (docs/notes/10-does-the-audit-say-when-the-answer-is-wrong.md: right about half the time, the rest about nine in ten),
    once it has given enough verdicts to tell a quarter."""

    above: int  # earlier verdicts the audit trusted more
    of: int  # earlier verdicts compared with

    MIN_PAST = 20
    DOUBTFUL_SHARE = 0.75

    @classmethod
    def among(cls, trust: float, earlier: Sequence[float]) -> Standing:
        return cls(sum(1 for t in earlier if t > trust), len(earlier))

    @property
    def doubtful(self) -> bool:
        return self.of >= self.MIN_PAST and self.above >= self.DOUBTFUL_SHARE * self.of


@dataclass(frozen=True, slots=True)
class Verdict:
    """A finished investigation: its trace and STAR's audit of it."""

    id: str
    service: str
    window: Window
    trace: Trace
    audit: Audit
    similar: tuple[InvestigationRow, ...] = ()  # earlier incidents with the same verdict
    standing: Standing | None = None  # where its trust stands among the bot's earlier verdicts
    calibration: Calibration | None = None  # learnt from the bot's marked verdicts (None: as shipped)

    @property
    def calibrated(self) -> Calibration:
        return self.calibration or shipped()

    @property
    def probability(self) -> float:
        """How often first places like this one were right (rca.calibration, as shipped, then
        shifted by what engineers marked of earlier verdicts)."""
        confidences = [confidence for _, _, confidence, _ in self.trace.decision.ranking]
        return self.calibrated.probability(features(confidences, sum(self.trace.evidence_package.modalities.values())))

    @property
    def leaders(self) -> tuple[str, ...]:
        """The services the evidence cannot tell apart at the top (one where it can)."""
        return tuple(h.service for h in tied(self.trace.hypotheses))

    @property
    def likely(self) -> bool:
        """Whether the first place may be called likely: no tie at the top, and first places
        like it were right at least 95 % of the time."""
        return len(self.leaders) <= 1 and self.probability >= self.calibrated.likely


@dataclass(frozen=True, slots=True)
class Chart:
    png: bytes
    title: str


# With a job queue: a queue that lost a run (Redis restarted without persistence) is given it
# again this many times; one that cannot be reached is waited for this long (a broker restart
# takes seconds), retried every few seconds, before the run is failed with that reason.
QUEUE_RETRIES = 2
QUEUE_PATIENCE = 120.0
QUEUE_RECONNECT = 2.0
ALERTMANAGER = "alertmanager"  # the user an alert-started investigation is recorded under


@dataclass(frozen=True, slots=True)
class Summary:
    start: float
    end: float
    rows: tuple[InvestigationRow, ...]
    repaired: frozenset[str]  # investigation ids with a repair
    feedback: dict[str, bool]  # investigation id -> last feedback: correct?

    @property
    def accuracy(self) -> float | None:
        return sum(self.feedback.values()) / len(self.feedback) if self.feedback else None

    @property
    def from_alerts(self) -> tuple[int, int, int]:
        """Investigations an alert started: how many, how many have feedback, how many marked right."""
        ids = [r.id for r in self.rows if r.user == ALERTMANAGER]
        judged = [self.feedback[i] for i in ids if i in self.feedback]
        return len(ids), len(judged), sum(judged)


class Desk:
    def __init__(self, *, telemetry: Telemetry, store: Store, memory: RepairMemory | None = None,
                 engine: str = "lats", workers: int = 2, reasoner: Reasoner | None = None,
                 time_budget: float | None = None, read_budget: int | None = None,
                 clock: Callable[[], float] = time.time, queue: JobQueue | None = None,
                 relay_lease: float = 30.0) -> None:  # fmt: skip
        if not isinstance(build_engine(engine), SearchEngine):  # a bad name fails now, not on the first /rca
            raise InputError(f"engine {engine!r} gives no four-stage trace; the bot needs lats, linear or linear-multi")
        self.telemetry = telemetry
        self.store = store
        self.memory = memory
        self.engine = engine
        self.reasoner = reasoner or OfflineReasoner()
        self.time_budget = time_budget
        self.read_budget = read_budget
        self.clock = clock
        self.workers = workers
        self.queue = queue  # set: investigations run as jobs on worker processes (bot.jobs)
        self.replica = f"replica-{uuid.uuid4().hex[:12]}"  # this process, as the holder of relay leases
        self.relay_lease = relay_lease
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rca-worker")
        self._slots = asyncio.Semaphore(workers)
        self._running: dict[str, Run] = {}
        self._opening: set[tuple[str, str]] = set()  # (service, channel) being validated
        self._incidents: dict[str, Incident] = {}  # recent investigations' incidents, by id
        self._contexts: dict[str, AuditContext] = {}  # their audit contexts, by incident id

    @classmethod
    def from_settings(cls, settings: Settings, *, telemetry: Telemetry, store: Store,
                      memory: RepairMemory | None = None, queue: JobQueue | None = None) -> Desk:  # fmt: skip
        """The desk the settings describe (the bot's, or a job-queue worker's)."""
        return cls(telemetry=telemetry, store=store, memory=memory, engine=settings.engine, workers=settings.workers,
                   reasoner=settings.build_reasoner(), time_budget=settings.time_budget,
                   read_budget=settings.read_budget, queue=queue, relay_lease=settings.relay_lease)  # fmt: skip

    def close(self) -> None:  # the job queue's connections close with the loop that made them
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- starting ----------------------------------------------------------------------------
    async def open(self, service: str, window_text: str, *, channel: str, user: str,
                   alert_time: float | None = None) -> Run:  # fmt: skip
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
            await asyncio.to_thread(self.store.start, id=run.id, service=service, window=(window.start, window.end),
                                    channel=channel, user=user, engine=self.engine)  # fmt: skip
            self._running[run.id] = run
        finally:
            self._opening.discard(key)
        self._remember_incident(run.id, incident)
        return run

    async def reopen(self, id: str, *, user: str) -> Run:
        """A new run over the same service, window and channel as an earlier investigation."""
        row = await self._row(id)
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
            async for event in self._queued(run, resume=resume):
                yield event
            return
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()

        def put(item: Event | BaseException | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            engine = build_engine(self.engine, reasoner=self.reasoner, time_budget=self.time_budget,
                                  read_budget=self.read_budget)  # fmt: skip
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
            async with self._slots:
                future = loop.run_in_executor(self._pool, work)
                while (item := await queue.get()) is not None:
                    if isinstance(item, BaseException):
                        raise item
                    if isinstance(item, Finished):
                        verdict_audit = await self._audit(run.incident, dict(item.trace))
                        await asyncio.to_thread(self.store.finish, run.id, trace=dict(item.trace),
                                                audit=verdict_audit.to_json(),
                                                calibration=trace_features(item.trace).to_json())  # fmt: skip
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

    async def _queued(self, run: Run, *, resume: bool = False) -> AsyncIterator[Event]:
        """The run as a job: enqueued (unless another replica did and this one takes over its
        thread), then its progress stream read in order from where the thread was told, under
        a lease that a replica that dies lets lapse."""
        from bot.jobs import JobLost  # that module builds on this one

        assert self.queue is not None
        store, lease = self.store, self.relay_lease

        async def renew() -> None:
            while await self.claim_relay(run.id):
                await asyncio.sleep(lease / 3)

        if not await self.claim_relay(run.id):
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
                        await asyncio.to_thread(self.store.fail, run.id, str(exc))
                        raise
                    await queue.forget(run.id)
                    enqueue, after = True, ""
                    await asyncio.to_thread(store.relayed, run.id, "")  # the new stream is told from its start
                    yield Restarted(requeued + 1, "the job queue lost it (was Redis restarted?); queued again")
                except (OSError, RedisError) as exc:  # the queue cannot be reached: wait for it, a while
                    now = self.clock()
                    if down_since is None:
                        down_since = now
                        yield Waiting(f"the job queue cannot be reached ({type(exc).__name__}); "
                                      f"waiting up to {QUEUE_PATIENCE:.0f} s for it")  # fmt: skip
                    elif now - down_since > QUEUE_PATIENCE:
                        await asyncio.to_thread(self.store.fail, run.id, f"job queue unavailable: {exc}")
                        raise RcaError(f"the job queue is unavailable ({type(exc).__name__}); "
                                       "run the command again") from exc  # fmt: skip
                    await asyncio.sleep(QUEUE_RECONNECT)
        finally:
            keeper.cancel()
            self._running.pop(run.id, None)

    async def claim_relay(self, id: str) -> bool:
        """Take the lease on an investigation's thread (False: another replica has it)."""
        now = self.clock()
        return bool(await asyncio.to_thread(self.store.lease, id, owner=self.replica, until=now + self.relay_lease,
                                            now=now))  # fmt: skip

    def release(self, id: str) -> None:
        self._running.pop(id, None)

    async def orphans(self) -> list[InvestigationRow]:
        """Queued investigations whose narrating replica stopped renewing its lease."""
        if self.queue is None:
            return []
        return await asyncio.to_thread(self.store.orphans, self.clock())

    async def adopt(self, row: InvestigationRow) -> Run:
        """A run for an investigation another replica was narrating, to go on with it here."""
        run = Run(row.id, row.service, Window(row.window_start, row.window_end), row.channel, row.user, row.created,
                  await self._incident(row))  # fmt: skip
        self._running[run.id] = run
        return run

    async def take_posting(self, id: str) -> bool:
        """Whether this replica posts the verdict (always, without a job queue: one process)."""
        return self.queue is None or bool(await asyncio.to_thread(self.store.take_posting, id))

    async def verdict(self, id: str) -> Verdict:
        """A finished investigation with its audit and earlier incidents like it."""
        return (await self.verdict_and_incident(id))[0]

    async def verdict_and_incident(self, id: str) -> tuple[Verdict, Incident]:
        """The verdict and the incident it was read from: one lookup, one audit."""
        row = await self._row(id)
        if row.trace is None:
            raise InputError(f"investigation {id} has no result ({row.status}{': ' + row.error if row.error else ''})")
        incident = await self._incident(row)
        trace, verdict_audit = await self._audited(incident, row.trace, stored=row.audit)
        similar = await asyncio.to_thread(self.store.similar, channel=row.channel, top_service=row.top_service,
                                          top_fault=row.top_fault, before=row.created)  # fmt: skip
        earlier = await asyncio.to_thread(self.store.trusts, before=row.created)
        marks = await asyncio.to_thread(self.store.marks, before=row.created)
        learnt = shipped().adapted([(Features.from_json(f), right) for f, right in marks])
        verdict = Verdict(row.id, row.service, Window(row.window_start, row.window_end), trace,
                          verdict_audit, tuple(similar), Standing.among(verdict_audit.trust, earlier), learnt)  # fmt: skip
        return verdict, incident

    # -- following up ------------------------------------------------------------------------
    async def repair(self, id: str, *, progress: Callable[[RepairStep], None] | None = None
                     ) -> tuple[Verdict, Verdict, RepairResult]:  # fmt: skip
        """STAR's repair of an investigation's trace: the verdict before, the repaired one (now
        the investigation's verdict) and the repair. `progress` sees each step on the caller's
        event loop as the repair takes it."""
        before, incident = await self.verdict_and_incident(id)
        ctx = RepairContext(await self._audit_context(incident), recollector(incident))
        loop = asyncio.get_running_loop()

        def step(s: RepairStep) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, s)

        async def run() -> RepairResult:  # on a worker, in its own loop: the model client is made there
            model = self.reasoner.for_investigation()
            critic = model.stage_critic if isinstance(model, ClaudeReasoner) else None
            try:
                return await repair(before.trace, replace(ctx, critic=critic), RepairConfig(), self.memory,
                                    progress=step)  # fmt: skip
            finally:
                await model.aclose()

        result = await self._in_worker(run)
        top = [h.service for h in before.trace.hypotheses[:1]] + [""]
        top_after = [h.service for h in result.trace.hypotheses[:1]] + [""]
        repaired = to_json(result.trace)
        steps = [{"round": s.round, "route": s.route, "stage": s.stage, "patch": s.patch, "before": s.before,
                  "after": s.after, "committed": s.committed} for s in result.steps]  # fmt: skip
        await asyncio.to_thread(self.store.add_repair, id, before=result.before.score, after=result.after.score,
                                decisive=result.decisive_stage, steps=steps, trace=repaired,
                                audit=result.after.to_json(), top_before=top[0], top_after=top_after[0])  # fmt: skip
        await asyncio.to_thread(self.store.finish, id, trace=repaired, audit=result.after.to_json(),
                                calibration=trace_features(repaired).to_json())  # fmt: skip
        return before, replace_verdict(before, result), result

    async def verify(self, id: str) -> VerificationRun:
        """Run the verification tests of an investigation's report against the telemetry."""
        verdict, incident = await self.verdict_and_incident(id)
        run = await self._in_worker(run_tests, verdict.trace, Toolbox(incident))
        await asyncio.to_thread(self.store.add_verification, id, run.to_json())
        return run

    async def feedback(self, id: str, *, user: str, correct: bool, true_cause: str = "", note: str = "") -> None:
        """Keep an engineer's judgement; a repair they confirm goes into the repair memory."""
        row = await self._row(id)
        # a service the investigation saw is known at once; any other is looked up in the telemetry
        if true_cause and true_cause not in (entities_of(from_json(row.trace)) if row.trace else ()):
            known = await self.telemetry.services()
            if true_cause not in known:
                raise InputError(f"unknown service {true_cause!r}.{suggest(true_cause, known)}")
        await asyncio.to_thread(self.store.add_feedback, id, user=user, correct=correct, true_cause=true_cause,
                                note=note[:2000])  # fmt: skip
        repairs = await asyncio.to_thread(self.store.repairs, id)
        if correct and repairs and repairs[-1].decisive and self.memory is not None and row.trace is not None:
            last = repairs[-1]
            trace = from_json(last.trace)
            graph = (await self._audit_context(await self._incident(row))).graph
            lead = trace.hypotheses[0].service if trace.hypotheses else ""
            degree = int(graph.degree(lead)) if lead in graph else 0
            patch = next((s["patch"] for s in last.steps if s["stage"] == last.decisive and s["committed"]), "")
            if patch:
                self.memory.remember(RepairRecord(Pattern.of(trace, degree), last.decisive, patch,
                                                  round(max(last.after - last.before, 0.01), 4)))  # fmt: skip

    async def ask(self, id: str, question: str, *, user: str) -> tuple[Answer, Chart | None]:
        """Answer a follow-up question from the stored investigation, with a chart when asked."""
        verdict, incident = await self.verdict_and_incident(id)
        parsed = parse_question(question[:2000], services=entities_of(verdict.trace))
        reply = answer(parsed, verdict.trace)
        if isinstance(self.reasoner, ClaudeReasoner) and reply.chart is None:  # free-form questions too
            reply = await self._model_answer(question, verdict.trace) or reply
        chart = await self.chart_for(verdict, incident, reply.chart) if reply.chart is not None else None
        text = reply.text if reply.chart is None or chart is not None else (
            f"I found no metric matching {reply.chart.metric!r} for {reply.chart.entity}.")
        await asyncio.to_thread(self.store.add_question, id, user=user, question=question, answer=text)
        return Answer(text, reply.chart), chart

    async def _model_answer(self, question: str, trace: Trace) -> Answer | None:
        """Claude's answer grounded in the trace's summary; None when it cannot give one."""
        assert isinstance(self.reasoner, ClaudeReasoner)
        model = self.reasoner.for_investigation()
        try:
            text = await model.answer(question, grounding(trace), {ev.id for ev in trace.evidence_package.evidence})
        finally:
            await model.aclose()
        return Answer(text) if text else None

    async def chart(self, id: str, request: ChartRequest | None = None) -> Chart | None:
        """A PNG of a metric around the onset: the one asked for, else the root cause's most
        anomalous metric; None when there is no such metric."""
        verdict, incident = await self.verdict_and_incident(id)
        return await self.chart_for(verdict, incident, request)

    async def chart_for(self, verdict: Verdict, incident: Incident, request: ChartRequest | None = None) -> Chart | None:
        request = request or decisive_signal(verdict.trace)
        if request is None or incident.sources.metrics is None:
            return None
        return await self._in_thread(_chart, incident, verdict, request)

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

    # -- internals ---------------------------------------------------------------------------
    async def _row(self, id: str) -> InvestigationRow:
        row = await asyncio.to_thread(self.store.investigation, id)
        if row is None:
            raise InputError(f"no investigation {id!r}")
        return row

    async def _incident(self, row: InvestigationRow) -> Incident:
        if row.id not in self._incidents:
            window = Window(row.window_start, row.window_end)
            self._remember_incident(row.id, await self.telemetry.incident(row.service, window))
        return self._incidents[row.id]

    def _remember_incident(self, id: str, incident: Incident) -> None:
        self._incidents[id] = incident
        while len(self._incidents) > 64:  # the oldest are rebuilt from the store when asked
            self._incidents.pop(next(iter(self._incidents)))

    async def _audit_context(self, incident: Incident) -> AuditContext:
        """The audit's view of an incident (a scan of its telemetry), read once per incident."""
        ctx = self._contexts.get(incident.id)
        if ctx is None:  # a scan of every modality: seconds of CPU, kept off the event loop (acks wait on it)
            ctx = self._contexts[incident.id] = await self._in_thread(audit_context, incident)
            while len(self._contexts) > 64:
                self._contexts.pop(next(iter(self._contexts)))
        return ctx

    async def _audited(self, incident: Incident, doc: dict[str, Any],
                       stored: Mapping[str, Any] | None = None) -> tuple[Trace, Audit]:  # fmt: skip
        """A stored trace read back (schema-checked) with its audit, off the event loop: the
        audit stored with it where that one is whole (no scan of the telemetry), else audited
        again (one stored before audits were kept whole)."""
        if stored is not None:
            try:
                kept = Audit.from_json(stored)
            except (KeyError, TypeError, ValueError):
                pass
            else:
                return await asyncio.to_thread(from_json, doc), kept
        ctx = await self._audit_context(incident)

        def read() -> tuple[Trace, Audit]:
            trace = from_json(doc)
            return trace, audit(trace, ctx)

        return await asyncio.to_thread(read)

    async def _audit(self, incident: Incident, doc: dict[str, Any]) -> Audit:
        return (await self._audited(incident, doc))[1]

    async def _in_worker(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run fn (sync, or async in a fresh loop) on one of the investigation workers."""
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(self._pool, _call, fn, *args)

    @staticmethod
    async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
        """Run short follow-up work (sync, or async in a fresh loop) off the event loop."""
        return await asyncio.to_thread(_call, fn, *args)


def decisive_signal(trace: Trace) -> ChartRequest | None:
    """The root cause's most anomalous metric, or the strongest metric on its causal chain."""
    if not trace.hypotheses:
        return None
    lead = trace.hypotheses[0]
    metrics = [ev for ev in trace.evidence_package.evidence if ev.modality is Modality.METRICS]
    own = [ev for ev in metrics if ev.entity == lead.service]
    chain = next((c for c in trace.chains if c.hypothesis == lead.id), None)
    on_chain = {ln.source for ln in chain.links} | {ln.target for ln in chain.links} if chain else set()
    pool = own or [ev for ev in metrics if ev.entity in on_chain]
    if not pool:
        return None
    best = max(pool, key=lambda ev: ev.score)
    return ChartRequest(best.entity, best.subject)


def replace_verdict(before: Verdict, result: RepairResult) -> Verdict:
    return Verdict(before.id, before.service, before.window, result.trace, result.after, before.similar,
                   calibration=before.calibration)  # fmt: skip



def _call(fn: Callable[..., Any], *args: Any) -> Any:
    out = fn(*args)
    return asyncio.run(out) if asyncio.iscoroutine(out) else out


async def _chart(incident: Incident, verdict: Verdict, request: ChartRequest) -> Chart | None:
    """Read the asked metric around the onset and draw it (runs on a worker thread)."""
    assert incident.sources.metrics is not None
    normal = incident.normal.get(Modality.METRICS)
    span = Window(min(verdict.window.start, normal.window.start) if normal else verdict.window.start,
                  verdict.window.end)  # fmt: skip
    series = await incident.sources.metrics.series(MetricQuery(span, (request.entity,)))
    wanted = request.metric.lower()
    picked = [s for s in series if s.metric.lower() == wanted] or [s for s in series if wanted in s.metric.lower()]
    picked = [s for s in picked if s.metric == picked[0].metric] if picked else []
    if not picked or not any(np.isfinite(s.values).any() for s in picked):
        return None
    onset = min((ev.onset for ev in verdict.trace.evidence_package.evidence
                 if ev.entity == request.entity and ev.subject == picked[0].metric and ev.onset), default=None)  # fmt: skip
    title = f"{picked[0].metric} of {request.entity}"
    png = signal_chart(picked, window=verdict.window, title=title, onset=onset,
                       normal=normal.window if normal else None)  # fmt: skip
    return Chart(png, title)
