"""The telemetry model: windows, series, log records, spans, incidents and their labels.

All timestamps are UTC epoch seconds (float). Values are frozen; arrays inside a Series are
not copied, so treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, NewType

import numpy as np
import pandas as pd

from rca.errors import InputError

if TYPE_CHECKING:
    from rca.sources.protocols import LogSource, MetricSource, TopologySource, TraceSource

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
)


def fault_type_from_text(text: str) -> FaultType:
    """Classify a fault name or an injection command into a FaultType."""
    low = text.lower()
    for words, kind in _FAULT_WORDS:
        if any(w in low for w in words):
            return kind
    return FaultType.UNKNOWN


class Severity(IntEnum):
    UNKNOWN = 0
    DEBUG = 10
    INFO = 20
    WARNING = 30
    ERROR = 40
    CRITICAL = 50


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open time interval [start, end) in UTC epoch seconds."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.start) and np.isfinite(self.end)):
            raise InputError(f"window bounds must be finite, got {self.start}..{self.end}")
        if self.end <= self.start:
            raise InputError(f"window must end after it starts: {self.start}..{self.end}")

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def contains(self, t: float) -> bool:
        return self.start <= t < self.end

    def overlaps(self, other: Window) -> bool:
        return self.start < other.end and other.start < self.end

    def to_iso(self) -> str:
        return f"{to_iso(self.start)}/{to_iso(self.end)}"


def to_iso(t: float) -> str:
    """Format epoch seconds as ISO 8601 UTC with a Z suffix."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True, eq=False)
class Series:
    """One metric of one entity over time; timestamps ascending, values may hold NaN."""

    entity: str
    metric: str
    timestamps: np.ndarray
    values: np.ndarray
    instance: str = ""

    def between(self, window: Window) -> Series:
        """The part of this series inside the window."""
        lo = int(np.searchsorted(self.timestamps, window.start, side="left"))
        hi = int(np.searchsorted(self.timestamps, window.end, side="left"))
        return Series(self.entity, self.metric, self.timestamps[lo:hi], self.values[lo:hi], self.instance)

    def __len__(self) -> int:
        return int(self.timestamps.shape[0])


@dataclass(frozen=True, slots=True)
class LogRecord:
    time: float
    entity: str
    severity: Severity
    message: str
    trace_id: str = ""
    template_id: str = ""
    instance: str = ""
    location: str = ""  # code location (class#line) when the format carries one
    error_code: str = ""  # an HTTP status >= 400, an error code or an exception class, when the line names one


class SpanStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    UNSET = "unset"


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root span
    entity: str
    operation: str
    start: float
    end: float
    status: SpanStatus = SpanStatus.UNSET
    instance: str = ""

    @property
    def duration(self) -> float:
        return self.end - self.start


_SPAN_COLUMNS = ("trace_id", "span_id", "parent_id", "entity", "operation", "start", "end", "status", "instance")


@dataclass(frozen=True, slots=True, eq=False)
class SpanTable(Sequence[Span]):
    """Spans as columns, one array per field: a trace read holds hundreds of thousands of
    spans, and the timings, the call graph and the window cuts work on whole columns. It is
    still a sequence of `Span`s; an element is built only when asked for."""

    trace_id: np.ndarray  # str objects
    span_id: np.ndarray
    parent_id: np.ndarray  # "" for a root span
    entity: np.ndarray
    operation: np.ndarray
    start: np.ndarray  # float epoch seconds
    end: np.ndarray
    status: np.ndarray  # SpanStatus objects
    instance: np.ndarray

    @classmethod
    def of(cls, spans: Iterable[Span]) -> SpanTable:
        """The spans as a table (a table is returned as it is)."""
        if isinstance(spans, SpanTable):
            return spans
        rows = list(spans)
        columns = [np.array([getattr(s, c) for s in rows], dtype=object) for c in _SPAN_COLUMNS]
        return cls(*columns)._typed()

    @classmethod
    def concat(cls, tables: Iterable[Sequence[Span]]) -> SpanTable:
        parts = [cls.of(t) for t in tables]
        if not parts:
            return cls.of(())
        return cls(*(np.concatenate([getattr(t, c) for t in parts]) for c in _SPAN_COLUMNS))._typed()

    def _typed(self) -> SpanTable:
        columns = {c: np.asarray(getattr(self, c), dtype=object) for c in _SPAN_COLUMNS}
        columns["start"] = np.asarray(self.start, dtype=float)
        columns["end"] = np.asarray(self.end, dtype=float)
        return SpanTable(**columns)

    def parent_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(child, parent) row positions of every span whose parent is in the table."""
        n = len(self)
        if n == 0:
            return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
        traces, _ = pd.factorize(self.trace_id)
        ids, _ = pd.factorize(np.concatenate([self.span_id, self.parent_id]))
        width = int(ids.max()) + 1  # a span's key: its trace and its id, as one integer
        mine, theirs = traces * width + ids[:n], traces * width + ids[n:]
        has_parent = self.parent_id != ""
        kids = pd.DataFrame({"key": theirs[has_parent], "child": np.flatnonzero(has_parent)})
        pairs = kids.merge(pd.DataFrame({"key": mine, "parent": np.arange(n)}), on="key")
        return pairs["child"].to_numpy(), pairs["parent"].to_numpy()

    def of_entities(self, entities: Sequence[str]) -> SpanTable:
        """The spans of these entities (all of them when none are named)."""
        return self.take(np.isin(self.entity, list(entities))) if entities else self

    def take(self, rows: np.ndarray | slice) -> SpanTable:
        """The rows at these positions (an index array, a boolean mask or a slice)."""
        return SpanTable(*(getattr(self, c)[rows] for c in _SPAN_COLUMNS))

    def __len__(self) -> int:
        return int(self.start.size)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self.take(i)
        return Span(
            str(self.trace_id[i]),
            str(self.span_id[i]),
            str(self.parent_id[i]),
            str(self.entity[i]),
            str(self.operation[i]),
            float(self.start[i]),
            float(self.end[i]),
            SpanStatus(self.status[i]),
            str(self.instance[i]),
        )

    def __iter__(self) -> Iterator[Span]:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True, slots=True)
class LineCounts:
    """Log lines per service over a stretch, how many of them report a failure, and how many
    minutes of the stretch held lines: what an aggregate log query returns (no line's text)."""

    lines: Mapping[str, int]
    errors: Mapping[str, int]
    minutes: float


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
