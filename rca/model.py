"""The incident model: where an investigation reads (Sources), what it is asked (Incident),
the truth of a labelled case, and what an engine answers (Diagnosis). The telemetry itself
(windows, series, log records, spans) is in rca.telemetry.

All timestamps are UTC epoch seconds (float). Values are frozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NewType

from rca.changes import Change
from rca.sources.protocols import LogSource, MetricSource, TopologySource, TraceSource
from rca.telemetry import Window

CaseId = NewType("CaseId", str)


class Modality(StrEnum):
    METRICS = "metrics"
    LOGS = "logs"
    TRACES = "traces"


class FaultType(StrEnum):
    CPU = "cpu"
    MEMORY = "memory"
    DISK = "disk"
    NETWORK_DELAY = "network_delay"
    NETWORK_LOSS = "network_loss"
    EXCEPTION = "exception"
    WRONG_RESULT = "wrong_result"
    OVERLOAD = "overload"
    RELEASE = "release"  # a faulty release or config change: what followed the change is the fault
    UNKNOWN = "unknown"


# Words in a publisher's fault name or injection command, in the order they are tried.
_FAULT_WORDS: tuple[tuple[tuple[str, ...], FaultType], ...] = (
    (("cpu",), FaultType.CPU),
    (("memory", "mem_", "oom"), FaultType.MEMORY),
    (("disk", "io_"), FaultType.DISK),
    (("loss", "drop", "corrupt"), FaultType.NETWORK_LOSS),
    (("delay", "latency", "sleep("), FaultType.NETWORK_DELAY),
    (("requests", "overload", "load", "stress"), FaultType.OVERLOAD),
    (("return", "wrong"), FaultType.WRONG_RESULT),
    (("exception", "error", "inject = true", "fail"), FaultType.EXCEPTION),
    (("release", "config_change"), FaultType.RELEASE),
)


def fault_type_from_text(text: str) -> FaultType:
    """Classify a fault name or an injection command into a FaultType."""
    low = text.lower()
    for words, kind in _FAULT_WORDS:
        if any(w in low for w in words):
            return kind
    return FaultType.UNKNOWN


@dataclass(frozen=True, slots=True)
class Sources:
    """Where an investigation reads telemetry; a None modality is absent."""

    metrics: MetricSource | None = None
    logs: LogSource | None = None
    traces: TraceSource | None = None
    topology: TopologySource | None = None

    def modalities(self) -> dict[str, bool]:
        return {
            Modality.METRICS.value: self.metrics is not None,
            Modality.LOGS.value: self.logs is not None,
            Modality.TRACES.value: self.traces is not None,
        }

    def without(self, *modalities: Modality) -> Sources:
        """The same sources with some modalities hidden."""
        return Sources(
            metrics=None if Modality.METRICS in modalities else self.metrics,
            logs=None if Modality.LOGS in modalities else self.logs,
            traces=None if Modality.TRACES in modalities else self.traces,
            topology=self.topology,
        )


@dataclass(frozen=True, slots=True)
class Normal:
    """Where the normal behaviour of one modality is read: a window and the sources holding it."""

    window: Window
    sources: Sources
    # a stretch the layout vouches is free of faults, beside the look-back (its sources hold
    # only that stretch and are read whole): it also tells which look-back minutes were not
    # normal themselves, such as the tail of an earlier incident
    fault_free: Sources | None = None

    def parts(self) -> tuple[Sources, ...]:
        """The look-back's sources, then the fault-free stretch's where there is one."""
        return (self.sources,) if self.fault_free is None else (self.sources, self.fault_free)


@dataclass(frozen=True, slots=True)
class Incident:
    """What an engine is given: never the label."""

    id: CaseId
    dataset: str
    symptom: str
    window: Window
    sources: Sources
    normal: Mapping[Modality, Normal] = field(default_factory=dict)
    alert_time: float | None = None
    notes: tuple[str, ...] = ()
    changes: tuple[Change, ...] = ()  # deploys, config pushes and the like, where they are recorded

    def normal_for(self, modality: Modality) -> Normal | None:
        return self.normal.get(modality)

    def missing(self) -> tuple[str, ...]:
        """Human-readable lines for every absent modality."""
        return tuple(f"{m}: absent" for m, present in self.sources.modalities().items() if not present)


@dataclass(frozen=True, slots=True)
class Label:
    """The truth of a labelled case, kept apart from what the engine sees."""

    service: str
    fault_type: FaultType
    raw_type: str
    start: float | None = None  # when the fault began (injected), where the publisher says


@dataclass(frozen=True, slots=True)
class IncidentCase:
    incident: Incident
    label: Label

    @property
    def id(self) -> CaseId:
        return self.incident.id


@dataclass(frozen=True, slots=True)
class BrokenCase:
    """A labelled case whose files could not be read: kept, so that an evaluation counts it."""

    id: CaseId
    dataset: str
    reason: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked root-cause candidate with the evidence that put it there."""

    service: str
    score: float
    fault_type: FaultType = FaultType.UNKNOWN
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Cost:
    """What an investigation spent."""

    seconds: float = 0.0
    iterations: int = 0
    hypotheses: int = 0
    evidence_items: int = 0
    llm_calls: int = 0
    llm_input_tokens: int = 0
    llm_output_tokens: int = 0
    llm_cached_tokens: int = 0
    reads: int = 0  # telemetry reads, as a read budget counts them (rca.evidence.toolbox.Toolbox.cost)
    llm_phases: tuple[tuple[str, int, int], ...] = ()  # (phase, calls, tokens): where the model was used

    @property
    def llm_tokens(self) -> int:
        return self.llm_input_tokens + self.llm_output_tokens


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """An engine's answer for one incident."""

    incident_id: CaseId
    engine: str
    ranking: tuple[Candidate, ...]
    missing: tuple[str, ...] = ()
    cost: Cost = Cost()
    trace: Mapping[str, object] | None = None
