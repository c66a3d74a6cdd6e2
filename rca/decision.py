"""From ranked hypotheses to a decision: confidences and a summary."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rca.hypotheses import Hypothesis
from rca.search.state import Decision, RankedCause


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


def decide(hypotheses: Sequence[Hypothesis], *, symptom: str, top: int = 10) -> Decision:
    """The ranking, its confidence and a one-line summary."""
    ranked = list(hypotheses[:top])
    if not ranked:
        return Decision((), 0.0, "no anomaly explains the symptom in what could be read")
    conf = confidences(ranked)
    causes = tuple(
        RankedCause(h.service, h.fault_type.value, c, h.id) for h, c in zip(ranked, conf, strict=True)
    )
    lead = ranked[0]
    summary = (
        f"{lead.service} ({lead.fault_type.value}) explains the symptom at "
        f"{symptom or 'the entry'}: {lead.rationale}"
    )
    return Decision(causes, conf[0], summary)
