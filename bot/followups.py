"""The thread's answers to a finished investigation: STAR's repair, the verification tests,
an engineer's mark, a follow-up question, and a chart of the decisive metric."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bot.casebook import Casebook
from bot.charts import signal_chart
from bot.telemetry import Telemetry
from bot.verdicts import Chart, Verdict, decisive_signal, replace_verdict
from rca.calibration import trace_features
from rca.errors import InputError
from rca.evidence.toolbox import Toolbox
from rca.explain import Answer, ChartRequest, answer, entities_of, grounding, parse_question
from rca.model import Incident, Modality
from rca.reasoners import Reasoner
from rca.reasoners.claude import ClaudeReasoner
from rca.replay import suggest
from rca.sources.protocols import MetricQuery
from rca.star.memory import Pattern, RepairMemory, RepairRecord
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, RepairResult, RepairStep, repair
from rca.star.verify import VerificationRun, run_tests
from rca.telemetry import Window
from rca.trace import Trace
from rca.trace_json import from_json, to_json


class FollowUps:
    def __init__(
        self, casebook: Casebook, *, telemetry: Telemetry, reasoner: Reasoner, memory: RepairMemory | None = None
    ) -> None:
        self.casebook = casebook
        self.store = casebook.store
        self.telemetry = telemetry
        self.reasoner = reasoner
        self.memory = memory

    async def repair(
        self, id: str, *, progress: Callable[[RepairStep], None] | None = None
    ) -> tuple[Verdict, Verdict, RepairResult]:
        """STAR's repair of an investigation's trace: the verdict before, the repaired one (now
        the investigation's verdict) and the repair. `progress` sees each step on the caller's
        event loop as the repair takes it."""
        before, incident = await self.casebook.verdict_and_incident(id)
        ctx = RepairContext(await self.casebook.audit_context(incident), recollector(incident))
        loop = asyncio.get_running_loop()

        def step(s: RepairStep) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, s)

        async def run() -> RepairResult:  # on a worker, in its own loop: the model client is made there
            model = self.reasoner.for_investigation()
            critic = model.stage_critic if isinstance(model, ClaudeReasoner) else None
            try:
                return await repair(
                    before.trace, replace(ctx, critic=critic), RepairConfig(), self.memory, progress=step
                )
            finally:
                await model.aclose()

        result = await self.casebook.in_worker(run)
        top = [h.service for h in before.trace.hypotheses[:1]] + [""]
        top_after = [h.service for h in result.trace.hypotheses[:1]] + [""]
        repaired = to_json(result.trace)
        steps = [
            {
                "round": s.round,
                "route": s.route,
                "stage": s.stage,
                "patch": s.patch,
                "before": s.before,
                "after": s.after,
                "committed": s.committed,
            }
            for s in result.steps
        ]
        await asyncio.to_thread(
            self.store.add_repair,
            id,
            before=result.before.score,
            after=result.after.score,
            decisive=result.decisive_stage,
            steps=steps,
            trace=repaired,
            audit=result.after.to_json(),
            top_before=top[0],
            top_after=top_after[0],
        )
        await asyncio.to_thread(
            self.store.finish,
            id,
            trace=repaired,
            audit=result.after.to_json(),
            calibration=trace_features(repaired).to_json(),
        )
        return before, replace_verdict(before, result), result

    async def verify(self, id: str) -> VerificationRun:
        """Run the verification tests of an investigation's report against the telemetry."""
        verdict, incident = await self.casebook.verdict_and_incident(id)
        run = await self.casebook.in_worker(run_tests, verdict.trace, Toolbox(incident))
        await asyncio.to_thread(self.store.add_verification, id, run.to_json())
        return run

    async def feedback(self, id: str, *, user: str, correct: bool, true_cause: str = "", note: str = "") -> None:
        """Keep an engineer's judgement; a repair they confirm goes into the repair memory."""
        row = await self.casebook.row(id)
        # a service the investigation saw is known at once; any other is looked up in the telemetry
        if true_cause and true_cause not in (entities_of(from_json(row.trace)) if row.trace else ()):
            known = await self.telemetry.services()
            if true_cause not in known:
                raise InputError(f"unknown service {true_cause!r}.{suggest(true_cause, known)}")
        await asyncio.to_thread(
            self.store.add_feedback, id, user=user, correct=correct, true_cause=true_cause, note=note[:2000]
        )
        repairs = await asyncio.to_thread(self.store.repairs, id)
        if correct and repairs and repairs[-1].decisive and self.memory is not None and row.trace is not None:
            last = repairs[-1]
            trace = from_json(last.trace)
            graph = (await self.casebook.audit_context(await self.casebook.incident(row))).graph
            lead = trace.hypotheses[0].service if trace.hypotheses else ""
            degree = int(graph.degree(lead)) if lead in graph else 0
            patch = next((s["patch"] for s in last.steps if s["stage"] == last.decisive and s["committed"]), "")
            if patch:
                self.memory.remember(
                    RepairRecord(
                        Pattern.of(trace, degree), last.decisive, patch, round(max(last.after - last.before, 0.01), 4)
                    )
                )

    async def ask(self, id: str, question: str, *, user: str) -> tuple[Answer, Chart | None]:
        """Answer a follow-up question from the stored investigation, with a chart when asked."""
        verdict, incident = await self.casebook.verdict_and_incident(id)
        parsed = parse_question(question[:2000], services=entities_of(verdict.trace))
        reply = answer(parsed, verdict.trace)
        if isinstance(self.reasoner, ClaudeReasoner) and reply.chart is None:  # free-form questions too
            reply = await self._model_answer(question, verdict.trace) or reply
        chart = await self.chart_for(verdict, incident, reply.chart) if reply.chart is not None else None
        text = (
            reply.text
            if reply.chart is None or chart is not None
            else (f"I found no metric matching {reply.chart.metric!r} for {reply.chart.entity}.")
        )
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
        verdict, incident = await self.casebook.verdict_and_incident(id)
        return await self.chart_for(verdict, incident, request)

    async def chart_for(
        self, verdict: Verdict, incident: Incident, request: ChartRequest | None = None
    ) -> Chart | None:
        request = request or decisive_signal(verdict.trace)
        if request is None or incident.sources.metrics is None:
            return None
        return await self.casebook.in_thread(_chart, incident, verdict, request)


async def _chart(incident: Incident, verdict: Verdict, request: ChartRequest) -> Chart | None:
    """Read the asked metric around the onset and draw it (runs on a worker thread)."""
    assert incident.sources.metrics is not None
    normal = incident.normal.get(Modality.METRICS)
    read = verdict.trace.evidence_package.window  # the window investigated: the one asked, or opened back
    span = Window(min(read.start, normal.window.start) if normal else read.start, read.end)
    series = await incident.sources.metrics.series(MetricQuery(span, (request.entity,)))
    wanted = request.metric.lower()
    picked = [s for s in series if s.metric.lower() == wanted] or [s for s in series if wanted in s.metric.lower()]
    picked = [s for s in picked if s.metric == picked[0].metric] if picked else []
    if not picked or not any(np.isfinite(s.values).any() for s in picked):
        return None
    onset = min(
        (
            ev.onset
            for ev in verdict.trace.evidence_package.evidence
            if ev.entity == request.entity and ev.subject == picked[0].metric and ev.onset
        ),
        default=None,
    )
    title = f"{picked[0].metric} of {request.entity}"
    png = signal_chart(picked, window=read, title=title, onset=onset, normal=normal.window if normal else None)
    return Chart(png, title)
