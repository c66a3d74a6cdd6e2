"""The telemetry an engine reads: a window of time, metric series, log records, spans (one by
one, or held as columns), and the line counts an aggregate log query returns.

All timestamps are UTC epoch seconds (float). Values are frozen; arrays inside a Series are
not copied, so treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import IntEnum, StrEnum

import numpy as np
import pandas as pd

from rca.errors import InputError


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
    # (child, parent) row positions, where found once for the several readers of one table
    # (`linked`); no column, and no table cut from this one keeps them
    links: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, kw_only=True)

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
        return SpanTable(*(columns[c] for c in _SPAN_COLUMNS))

    def linked(self) -> SpanTable:
        """This table with its `parent_pairs` found, for readers that each ask for them."""
        return self if self.links is not None else replace(self, links=self.parent_pairs())

    def parent_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(child, parent) row positions of every span whose parent is in the table."""
        if self.links is not None:
            return self.links
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
