"""Running engines over labelled cases; the label is read here, never by an engine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rca.engines import Engine
from rca.evaluation.metrics import Outcome
from rca.model import Diagnosis, FaultType, IncidentCase


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: IncidentCase
    diagnosis: Diagnosis
    outcome: Outcome


Progress = Callable[[int, int, str], None]


async def evaluate(
    engines: Sequence[Engine],
    cases: Sequence[IncidentCase],
    *,
    progress: Progress | None = None,
) -> list[CaseResult]:
    """Every engine on every case, in case order; progress(done, total, label) after each run."""
    results = []
    total = len(engines) * len(cases)
    done = 0
    for case in cases:
        for engine in engines:
            started = time.perf_counter()
            diagnosis = await engine.investigate(case.incident)
            seconds = time.perf_counter() - started
            results.append(CaseResult(case, diagnosis, _outcome(case, diagnosis, seconds)))
            done += 1
            if progress is not None:
                progress(done, total, f"{engine.name} {case.id}")
    return results


def _outcome(case: IncidentCase, diagnosis: Diagnosis, seconds: float) -> Outcome:
    ranking = diagnosis.ranking
    return Outcome(
        engine=diagnosis.engine,
        dataset=case.incident.dataset,
        case_id=case.id,
        truth_service=case.label.service,
        truth_fault=case.label.fault_type,
        ranked=tuple(c.service for c in ranking),
        top_fault=ranking[0].fault_type if ranking else FaultType.UNKNOWN,
        seconds=seconds,
    )
