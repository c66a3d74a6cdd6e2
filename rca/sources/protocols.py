"""The small async interfaces every telemetry backend implements.

A dataset on disk, a live Prometheus or Loki, and a test's in-memory data all stand behind
these, so the engine never knows which one it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import networkx as nx

from rca.telemetry import LineCounts, LogRecord, Series, Severity, Span, Window

# A line reports a failure by its level (WARNING and above) or by these words: what the engine
# counts as an error line, and what a log backend that counts lines filters them with.
_ERROR_WORDS = ("exception", "threw", "error", "fail", "refused", "timeout", "unavailable")
ERROR_LINE_PATTERN = "(?i)(warn|critical|fatal|" + "|".join(_ERROR_WORDS) + ")"


def is_error(template: str, severity: Severity) -> bool:
    """A line (or template) that reports a failure: by its level, or by its words where the
    level is low."""
    return severity >= Severity.WARNING or any(w in template.lower() for w in _ERROR_WORDS)


@dataclass(frozen=True, slots=True)
class MetricQuery:
    """Series of some entities and metrics inside a window; an empty tuple means all."""

    window: Window
    entities: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()

    def describe(self) -> str:
        who = ",".join(self.entities) or "*"
        what = ",".join(self.metrics) or "*"
        return f"metrics{{entity={who}, metric={what}}}[{self.window.to_iso()}]"


@dataclass(frozen=True, slots=True)
class LogQuery:
    window: Window
    entities: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"logs{{entity={','.join(self.entities) or '*'}}}[{self.window.to_iso()}]"


@dataclass(frozen=True, slots=True)
class SpanQuery:
    window: Window
    entities: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"spans{{entity={','.join(self.entities) or '*'}}}[{self.window.to_iso()}]"


@runtime_checkable
class MetricSource(Protocol):
    async def entities(self) -> tuple[str, ...]:
        """Every entity this source has series for."""
        ...

    async def series(self, query: MetricQuery) -> list[Series]:
        """The series matching the query, cut to its window."""
        ...


@runtime_checkable
class LogSource(Protocol):
    async def records(self, query: LogQuery) -> list[LogRecord]:
        """Log records inside the window, oldest first."""
        ...


@runtime_checkable
class LineCountSource(Protocol):
    """A log backend that can count lines without returning them (an aggregate query)."""

    async def line_counts(self, window: Window) -> LineCounts:
        """Every service's lines in the window, and those that report a failure
        (ERROR_LINE_PATTERN)."""
        ...


@runtime_checkable
class ServiceListSource(Protocol):
    """A log backend that names the services it holds lines of in a window without returning
    them (Loki's label values)."""

    async def services(self, window: Window) -> tuple[str, ...]: ...


@runtime_checkable
class TraceSource(Protocol):
    async def spans(self, query: SpanQuery) -> Sequence[Span]:
        """Spans that start inside the window (a list, or a `SpanTable` of columns)."""
        ...


@runtime_checkable
class TopologySource(Protocol):
    async def topology(self) -> nx.DiGraph:
        """The service call graph, caller -> callee."""
        ...


@runtime_checkable
class WindowedTopology(Protocol):
    """A call graph read from the incident window's own spans, which moves with the window."""

    async def topology(self) -> nx.DiGraph: ...

    def over(self, window: Window) -> TopologySource:
        """The call graph as read for another window."""
        ...
