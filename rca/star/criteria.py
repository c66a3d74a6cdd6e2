"""What every stage check returns: a criterion's score, weight and the evidence it blames."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from rca.model import FaultType
from rca.trace import Trace

VIOLATION_BELOW = 0.8  # a criterion scoring under this is reported as violated


@dataclass(frozen=True, slots=True)
class Criterion:
    """One RCA requirement judged on one stage: s in [0, 1] with weight w."""

    stage: str  # evidence_package | hypothesis_set | analysis_structure | decision_report
    name: str
    score: float
    weight: float
    explanation: str
    blamed: tuple[str, ...] = ()  # evidence, hypothesis or link ids that violate it
    necessary: bool = False  # violated, the trace is not accepted however well the rest scores

    @property
    def violated(self) -> bool:
        return self.score < VIOLATION_BELOW

    @property
    def unmet(self) -> bool:
        """A requirement that is violated: the trace is not accepted, whatever it scores."""
        return self.necessary and self.violated


@dataclass(frozen=True, slots=True)
class AuditContext:
    """What the audit checks a trace against: the call graph, what telemetry exists, and the
    entities a scan of that telemetry flags most (empty when not scanned)."""

    graph: nx.DiGraph
    modalities_available: dict[str, bool] = field(default_factory=dict)
    leads: tuple[str, ...] = ()


# Which modality shows each fault mechanism at its source.
MECHANISM_MODALITIES: dict[FaultType, tuple[str, ...]] = {
    FaultType.CPU: ("metrics",),
    FaultType.MEMORY: ("metrics",),
    FaultType.DISK: ("metrics",),
    FaultType.NETWORK_DELAY: ("traces", "metrics"),
    FaultType.NETWORK_LOSS: ("metrics", "traces"),
    FaultType.EXCEPTION: ("logs", "traces"),
    FaultType.WRONG_RESULT: ("logs",),
    FaultType.OVERLOAD: ("metrics",),
    FaultType.RELEASE: ("logs", "traces", "metrics"),
    FaultType.UNKNOWN: (),
}

# Which verification tool observes each mechanism directly.
MECHANISM_TOOLS: dict[FaultType, tuple[str, ...]] = {
    FaultType.CPU: ("metrics", "spans"),
    FaultType.MEMORY: ("metrics",),
    FaultType.DISK: ("metrics",),
    FaultType.NETWORK_DELAY: ("spans", "metrics"),
    FaultType.NETWORK_LOSS: ("metrics", "spans"),
    FaultType.EXCEPTION: ("logs", "spans"),
    FaultType.WRONG_RESULT: ("logs",),
    FaultType.OVERLOAD: ("metrics",),
    FaultType.RELEASE: ("logs", "spans", "metrics"),
    FaultType.UNKNOWN: ("metrics", "logs", "spans"),
}


def leading(trace: Trace, k: int = 3) -> list:
    return list(trace.hypotheses[:k])
