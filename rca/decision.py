"""From ranked hypotheses to a decision: confidences and a summary."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rca.hypotheses import RANK_PRECISION as PRECISION
from rca.hypotheses import Hypothesis


@dataclass(frozen=True, slots=True)
class RankedCause:
    service: str
    fault_type: str
    confidence: float
    hypothesis: str


@dataclass(frozen=True, slots=True)
class Decision:
    """What a reasoner decides: causes ranked with their confidences, and a summary."""

    ranking: tuple[RankedCause, ...]
    confidence: float
    summary: str


def _unit(x: float) -> float:
    """x in [0, 1]; anything not a finite number is 0."""
    return min(1.0, max(0.0, x)) if math.isfinite(x) else 0.0


def confidences(ranked: Sequence[Hypothesis]) -> list[float]:
    """A hypothesis' value tempered by how clearly it leads the next one, never above the
    confidence of a hypothesis ranked before it (a ranked list reads top down); always in
    [0, 0.99], whatever the values (two that tie to the ranking's precision lead by nothing)."""
    out: list[float] = []
    for i, h in enumerate(ranked):
        value = _unit(h.value)
        nxt = _unit(ranked[i + 1].value) if i + 1 < len(ranked) else 0.0
        margin = _unit((value - nxt) / value) if value > 0 else 0.0
        conf = round(min(0.99, value * (0.6 + 0.4 * margin)), 4)
        out.append(min(conf, out[-1]) if out else conf)
    return out


def tied(hypotheses: Sequence[Hypothesis]) -> tuple[Hypothesis, ...]:
    """The leader and every hypothesis whose value equals its value at the ranking's
    precision: what the evidence does not tell apart (empty when nothing is ranked)."""
    if not hypotheses:
        return ()
    lead = round(hypotheses[0].value, PRECISION)
    return tuple(h for h in hypotheses if round(h.value, PRECISION) == lead)


def either(names: Sequence[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def decide(hypotheses: Sequence[Hypothesis], *, symptom: str, top: int = 10) -> Decision:
    """The ranking, its confidence and a one-line summary; where the evidence scores several
    leaders the same, the summary names them all ("A or B"), never one by its place in a list."""
    ranked = list(hypotheses[:top])
    if not ranked:
        return Decision((), 0.0, "no anomaly explains the symptom in what could be read")
    conf = confidences(ranked)
    causes = tuple(RankedCause(h.service, h.fault_type.value, c, h.id) for h, c in zip(ranked, conf, strict=True))
    lead = ranked[0]
    level = tied(hypotheses)
    if len(level) > 1:
        names = either([f"{h.service} ({h.fault_type.value})" for h in level])
        summary = (
            f"{names} explain the symptom at {symptom or 'the entry'} equally: their evidence scores "
            f"the same ({lead.value:.{PRECISION}f}), and a check between them is needed"
        )
    else:
        summary = (
            f"{lead.service} ({lead.fault_type.value}) explains the symptom at "
            f"{symptom or 'the entry'}: {lead.rationale}"
        )
    return Decision(causes, conf[0], summary)
