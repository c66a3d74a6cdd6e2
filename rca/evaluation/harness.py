"""Running engines over labelled cases; the label is read here, never by an engine.

A case that breaks an engine (or its placement) is recorded with the error and counted as a
miss; the evaluation goes on with the next one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rca.calibration import Features, features, trace_features
from rca.engines import Engine
from rca.evaluation.metrics import AuditOutcome, Outcome, grounded
from rca.evaluation.protocols import Protocol
from rca.hypotheses import RANK_PRECISION
from rca.model import BrokenCase, CaseId, Diagnosis, FaultType, Incident, IncidentCase
from rca.star.audit import audit as audit_trace
from rca.star.context import audit_context
from rca.star.criteria import AuditContext
from rca.trace_json import from_json

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One engine's run on one case, and what the report reads of its trace: the trace itself
    (a few hundred kilobytes) is let go unless asked for, so that an evaluation holds what
    its cases' answers say, not every case's reasoning."""

    incident: Incident | None  # what the engine was given, under the protocol (None: unreadable)
    diagnosis: Diagnosis  # without its trace, unless kept (`of`)
    outcome: Outcome
    error: str | None  # what broke: the case's files, its placement or the engine
    features: Features  # what the calibration reads of the ranking (its trace's, where it had one)
    tied: int  # how many candidates share the first place's value

    @classmethod
    def of(
        cls,
        incident: Incident | None,
        diagnosis: Diagnosis,
        outcome: Outcome,
        error: str | None = None,
        *,
        keep_trace: bool = False,
    ) -> CaseResult:
        """The result, its reading taken from the whole diagnosis, then its trace let go
        unless `keep_trace`."""
        reading = _features(incident, diagnosis), _tied(diagnosis)
        kept = diagnosis if keep_trace or diagnosis.trace is None else replace(diagnosis, trace=None)
        return cls(incident, kept, outcome, error, *reading)


def _features(incident: Incident | None, diagnosis: Diagnosis) -> Features:
    """What the calibration reads of the ranking (its trace's, where there is one)."""
    if diagnosis.trace is not None:
        return trace_features(diagnosis.trace)
    read = sum(incident.sources.modalities().values()) if incident is not None else 0
    return features([c.score for c in diagnosis.ranking], read)


def _tied(diagnosis: Diagnosis) -> int:
    """How many candidates share the first place's value at the ranking's precision (the
    trace's hypothesis values where there is a trace, else the ranking's scores)."""
    trace = diagnosis.trace or {}
    hyps = trace.get("hypothesis_set", {}).get("hypotheses", []) if isinstance(trace, dict) else []
    values = [float(h["value"]) for h in hyps] or [c.score for c in diagnosis.ranking]
    if not values:
        return 0
    return sum(round(v, RANK_PRECISION) == round(values[0], RANK_PRECISION) for v in values)


Progress = Callable[[int, int, str], None]


async def evaluate(
    engines: Sequence[Engine],
    cases: Sequence[IncidentCase],
    *,
    protocol: Protocol = Protocol(),
    progress: Progress | None = None,
    broken: Sequence[BrokenCase] = (),
    audit: bool = False,
    keep_traces: bool = False,
) -> list[CaseResult]:
    """Every engine on every case, in case order, then the unreadable cases as errors;
    progress(done, total, label) after each run. With `audit`, STAR audits each trace (at its
    default thresholds, from the incident's telemetry), as a user would see it. Each result
    keeps its trace only with `keep_traces`."""
    results = []
    total = len(engines) * len(cases)
    done = 0
    for case in cases:
        incident, placement_error = await _placed(case, protocol)
        context: AuditContext | None = None
        for engine in engines:
            started = time.perf_counter()
            error = placement_error
            diagnosis = Diagnosis(case.id, engine.name, ())
            if error is None:
                try:
                    diagnosis = await engine.investigate(incident)
                except Exception as exc:  # the edge of an evaluation: one case never stops the rest
                    log.exception("%s failed on %s", engine.name, case.id)
                    error = _describe(exc)
            seconds = time.perf_counter() - started
            outcome = _outcome(case, diagnosis, seconds, error)
            if audit and error is None and diagnosis.trace:
                try:
                    context = context or await audit_context(incident)
                    a = audit_trace(from_json(dict(diagnosis.trace)), context)
                    blamed = a.blamed
                    outcome = replace(
                        outcome, audit=AuditOutcome(a.score, a.route.value, blamed.stage if blamed else None, a.support)
                    )
                except Exception:  # an audit that breaks leaves the case unaudited, not the run stopped
                    log.exception("auditing %s on %s failed", engine.name, case.id)
            results.append(CaseResult.of(incident, diagnosis, outcome, error, keep_trace=keep_traces))
            done += 1
            if progress is not None:
                progress(done, total, f"{engine.name} {case.id}")
    for b in broken:
        for engine in engines:
            outcome = Outcome(
                engine.name,
                b.dataset,
                b.id,
                "",
                FaultType.UNKNOWN,
                (),
                FaultType.UNKNOWN,
                0.0,
                f"unreadable: {b.reason}"[:500],
            )
            results.append(CaseResult.of(None, Diagnosis(b.id, engine.name, ()), outcome, outcome.error))
    return results


async def _placed(case: IncidentCase, protocol: Protocol) -> tuple[Incident, str | None]:
    try:
        return await protocol.place(case), None
    except Exception as exc:  # a case whose data cannot be placed is that case's error
        log.exception("placing %s under %s failed", case.id, protocol.name)
        return case.incident, f"placement: {_describe(exc)}"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _outcome(case: IncidentCase, diagnosis: Diagnosis, seconds: float, error: str | None) -> Outcome:
    ranking = diagnosis.ranking
    return Outcome(
        engine=diagnosis.engine,
        dataset=case.incident.dataset,
        case_id=CaseId(case.id),
        truth_service=case.label.service,
        truth_fault=case.label.fault_type,
        ranked=tuple(c.service for c in ranking),
        top_fault=ranking[0].fault_type if ranking else FaultType.UNKNOWN,
        seconds=seconds,
        error=error,
        grounded=grounded(diagnosis.trace, case.label.start),
    )
