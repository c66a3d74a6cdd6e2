"""Accuracy of rankings against labels."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rca.model import FaultType
from rca.profiles import sampling_step
from rca.topology import ONSET_TOLERANCE


@dataclass(frozen=True, slots=True)
class AuditOutcome:
    """STAR's audit of the engine's trace for one case: what it would tell a user."""

    score: float  # how well the trace is made (STAR's S)
    route: str  # accept | fast_patch | slow_localise
    weakest_stage: str | None
    support: float = 1.0  # how far the telemetry backs the answer (rca.star.support)

    @property
    def trust(self) -> float:
        return self.score * self.support


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
    audit: AuditOutcome | None = None  # with `--audit`, for engines that write a trace
    grounded: bool | None = None  # the first place rests on the labelled fault's time (`grounded`)

    @property
    def right(self) -> bool:
        return self.rank_of_truth() == 1

    @property
    def right_grounded(self) -> bool:
        """Right, and resting on an anomaly of the labelled fault's time, not only an earlier one's."""
        return self.right and self.grounded is True

    def rank_of_truth(self) -> int | None:
        """1-based position of the true service, None when absent."""
        try:
            return self.ranked.index(self.truth_service) + 1
        except ValueError:
            return None


def grounded(trace: Mapping[str, Any] | None, start: float | None) -> bool | None:
    """Whether a trace's first place cites an anomaly begun no earlier than a labelled fault's
    start, less the onset tolerance and one sampling step of that anomaly: a first place that
    rests on the fault asked about, not only on an earlier one (where a dataset faults one
    service several times in a row, an earlier fault's evidence names the right service too).
    None without a trace, a first place, a labelled start or a cited anomaly with an onset."""
    if trace is None or start is None:
        return None
    ranking = trace["decision_report"]["ranking"]
    first = next(
        (h for h in trace["hypothesis_set"]["hypotheses"] if ranking and h["id"] == ranking[0].get("hypothesis")), None
    )
    if first is None:
        return None
    cites = set(first["evidence"])
    dated = [e for e in trace["evidence_package"]["evidence"] if e["id"] in cites and e.get("onset") is not None]
    if not dated:
        return None
    return any(e["onset"] >= start - ONSET_TOLERANCE - sampling_step([e.get("profile") or ()]) for e in dated)


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
    ac1_grounded: float | None = None  # right and resting on the labelled fault's time; None: nobody said


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
        ac1_grounded=(
            sum(o.right_grounded for o in outcomes) / len(outcomes)
            if any(o.grounded is not None for o in outcomes)
            else None
        ),
    )


def _trust(a: AuditOutcome) -> float:
    return a.trust


def _form(a: AuditOutcome) -> float:
    return a.score


def auroc(outcomes: Sequence[Outcome], of: Callable[[AuditOutcome], float] = _trust) -> float | None:
    """How well a low audit figure (the trust, by default) predicts a wrong first place: the
    probability that a wrong case scores below a right one (ties count half); None without
    both kinds."""
    scored = [o for o in outcomes if o.audit is not None]
    wrong = [of(o.audit) for o in scored if not o.right]  # type: ignore[arg-type]
    right = [of(o.audit) for o in scored if o.right]  # type: ignore[arg-type]
    return separation(right, wrong)


def separation(high: Sequence[float], low: Sequence[float]) -> float | None:
    """The chance a value of `high` exceeds one of `low` (ties count half): the AUROC of the
    value for telling the two apart; None without both."""
    if not high or not low:
        return None
    wins = sum(1.0 if h > lo else 0.5 if h == lo else 0.0 for h in high for lo in low)
    return wins / (len(high) * len(low))


@dataclass(frozen=True, slots=True)
class Coverage:
    """Accuracy where the audit accepts the trace as it is, against accuracy overall."""

    group: str
    engine: str
    cases: int
    ac1: float
    auroc: float | None
    accepted: float  # the share of cases accepted
    ac1_accepted: float | None
    ac1_flagged: float | None
    auroc_form: float | None = None  # the same for the form score S alone
    # (share of cases kept, AC@1 on them) keeping the most trusted answers first
    at_coverage: tuple[tuple[float, float], ...] = ()


COVERAGES = (0.5, 0.75, 0.9)  # the shares of cases a report keeps, most trusted first


def accuracy_at_coverage(outcomes: Sequence[Outcome], share: float) -> float:
    """AC@1 on the `share` of audited cases the audit trusts most."""
    scored = sorted((o for o in outcomes if o.audit is not None), key=lambda o: -o.audit.trust)  # type: ignore[union-attr]
    kept = scored[: max(1, round(share * len(scored)))]
    return ac_at(kept, 1)


def coverage(group: str, engine: str, outcomes: Sequence[Outcome]) -> Coverage | None:
    scored = [o for o in outcomes if o.audit is not None]
    if not scored:
        return None
    accepted = [o for o in scored if o.audit.route == "accept"]  # type: ignore[union-attr]
    flagged = [o for o in scored if o.audit.route != "accept"]  # type: ignore[union-attr]
    return Coverage(
        group,
        engine,
        len(scored),
        ac_at(scored, 1),
        auroc(scored),
        len(accepted) / len(scored),
        ac_at(accepted, 1) if accepted else None,
        ac_at(flagged, 1) if flagged else None,
        auroc(scored, _form),
        tuple((c, accuracy_at_coverage(scored, c)) for c in COVERAGES),
    )
