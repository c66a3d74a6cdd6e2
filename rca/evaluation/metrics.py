"""Accuracy of rankings against labels."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rca.model import FaultType


@dataclass(frozen=True, slots=True)
class Outcome:
    """One engine's answer to one case, next to the truth."""

    engine: str
    dataset: str
    case_id: str
    truth_service: str
    truth_fault: FaultType
    ranked: tuple[str, ...]
    top_fault: FaultType
    seconds: float
    error: str | None = None  # the run failed: counted as a miss

    def rank_of_truth(self) -> int | None:
        """1-based position of the true service, None when absent."""
        try:
            return self.ranked.index(self.truth_service) + 1
        except ValueError:
            return None


def ac_at(outcomes: Sequence[Outcome], k: int) -> float:
    """Share of cases whose true root cause is in the top k."""
    if not outcomes:
        return 0.0
    hits = sum(1 for o in outcomes if (r := o.rank_of_truth()) is not None and r <= k)
    return hits / len(outcomes)


def avg_at(outcomes: Sequence[Outcome], k: int = 5) -> float:
    """Mean of AC@1 .. AC@k."""
    return sum(ac_at(outcomes, i) for i in range(1, k + 1)) / k


def fault_accuracy(outcomes: Sequence[Outcome]) -> float:
    """Share of cases whose top candidate carries the true fault type."""
    if not outcomes:
        return 0.0
    return sum(1 for o in outcomes if o.top_fault == o.truth_fault) / len(outcomes)


@dataclass(frozen=True, slots=True)
class Summary:
    group: str
    engine: str
    cases: int
    ac1: float
    ac3: float
    avg5: float
    fault_acc: float
    median_seconds: float
    max_seconds: float
    errors: int = 0


def summarise(group: str, engine: str, outcomes: Sequence[Outcome]) -> Summary:
    secs = [o.seconds for o in outcomes] or [0.0]
    return Summary(
        group=group,
        engine=engine,
        cases=len(outcomes),
        ac1=ac_at(outcomes, 1),
        ac3=ac_at(outcomes, 3),
        avg5=avg_at(outcomes, 5),
        fault_acc=fault_accuracy(outcomes),
        median_seconds=statistics.median(secs),
        max_seconds=max(secs),
        errors=sum(1 for o in outcomes if o.error is not None),
    )
