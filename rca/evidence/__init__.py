"""Evidence: what the telemetry says, item by item, each with the query that produced it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import NewType

from rca.model import Modality
from rca.signals import PROCESS_SIGNALS, Signal

EvidenceId = NewType("EvidenceId", str)


class EvidenceKind(StrEnum):
    METRIC_SHIFT = "metric_shift"
    LOG_NEW_TEMPLATE = "log_new_template"
    LOG_ERROR_SHIFT = "log_error_shift"
    LOG_DEPENDENCY_ERROR = "log_dependency_error"  # error lines that name another service: failed calls to it
    LOG_FREQUENCY_SHIFT = "log_frequency_shift"
    LOG_PATH_CUT = "log_path_cut"  # a service wrote the first of two lines it writes together, not the second
    TRACE_WRONG_ANSWER = "trace_wrong_answer"  # calls a service answered in time as a success, failed by their callers
    TRACE_SELF_TIME = "trace_self_time"
    TRACE_EDGE_LATENCY = "trace_edge_latency"
    TRACE_ERRORS = "trace_errors"
    TRACE_REPEATED_CALLS = "trace_repeated_calls"  # calls a service gave up on before they were answered and sent again


@dataclass(frozen=True, slots=True)
class Evidence:
    """One anomaly found in one entity's telemetry.

    `score` is a robust deviation (about 3 is notable, 10 is strong); `onset` is when the
    change began, when it can be told; `query` re-runs what produced it.
    """

    id: EvidenceId
    modality: Modality
    kind: EvidenceKind
    entity: str
    subject: str
    score: float
    signal: Signal
    query: str
    detail: str
    onset: float | None = None
    direction: int = 1  # +1 the value rose, -1 it fell
    profile: tuple[tuple[float, float], ...] = ()  # (time, robust z): the shape of a metric shift
    until: float | None = None  # when the anomaly was last seen, where it ended inside the window
    peers: tuple[str, ...] = ()  # other entities it names: the callees of failed calls
    under_way: bool = False  # anomalous from the first data read: it began before them, when is unknown

    def __post_init__(self) -> None:
        # stored at the precision the trace keeps, so a replay from JSON sees the same numbers
        object.__setattr__(self, "score", round(float(self.score), 4))

    @property
    def of_process(self) -> bool:
        """A series of the process's own resources (rca.signals.PROCESS_SIGNALS: CPU, memory
        and GC, disk, descriptors), not of the work it does for others."""
        return self.kind is EvidenceKind.METRIC_SHIFT and self.signal in PROCESS_SIGNALS

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "modality": self.modality.value,
            "kind": self.kind.value,
            "entity": self.entity,
            "subject": self.subject,
            "score": self.score,
            "signal": self.signal.value,
            "query": self.query,
            "detail": self.detail,
            "onset": self.onset,
            "direction": self.direction,
            "profile": [list(p) for p in self.profile],
            "until": self.until,
            "peers": list(self.peers),
            "under_way": self.under_way,
        }


def earliest_onsets(evidence: Iterable[Evidence]) -> dict[str, float]:
    """Per entity, when its first anomaly with a known onset began."""
    out: dict[str, float] = {}
    for ev in evidence:
        if ev.onset is not None:
            out[ev.entity] = min(out.get(ev.entity, ev.onset), ev.onset)
    return out
