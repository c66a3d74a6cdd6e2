"""In-memory sources: what dataset adapters hand out once files are read, and what tests build."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import networkx as nx
import numpy as np

from rca.model import LogRecord, Series, Span
from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery


class InMemoryMetrics:
    """Series held in memory, filtered and cut per query."""

    def __init__(self, series: Iterable[Series]) -> None:
        self._series = tuple(series)

    async def entities(self) -> tuple[str, ...]:
        return tuple(sorted({s.entity for s in self._series}))

    async def series(self, query: MetricQuery) -> list[Series]:
        wanted_e = set(query.entities)
        wanted_m = set(query.metrics)
        out = []
        for s in self._series:
            if wanted_e and s.entity not in wanted_e:
                continue
            if wanted_m and s.metric not in wanted_m:
                continue
            part = s.between(query.window)
            if len(part):
                out.append(part)
        return out


def _times_index(items: Sequence[object], key: Callable[[object], float]) -> np.ndarray:
    return np.fromiter((key(i) for i in items), dtype=float, count=len(items))


class InMemoryLogs:
    """Log records held in memory, sorted by time."""

    def __init__(self, records: Iterable[LogRecord]) -> None:
        self._records = tuple(sorted(records, key=lambda r: r.time))
        self._times = _times_index(self._records, lambda r: r.time)  # type: ignore[attr-defined]

    async def records(self, query: LogQuery) -> list[LogRecord]:
        lo = int(np.searchsorted(self._times, query.window.start, side="left"))
        hi = int(np.searchsorted(self._times, query.window.end, side="left"))
        wanted = set(query.entities)
        return [r for r in self._records[lo:hi] if not wanted or r.entity in wanted]


class InMemoryTraces:
    """Spans held in memory, sorted by start time."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self._spans = tuple(sorted(spans, key=lambda s: s.start))
        self._times = _times_index(self._spans, lambda s: s.start)  # type: ignore[attr-defined]

    async def spans(self, query: SpanQuery) -> list[Span]:
        lo = int(np.searchsorted(self._times, query.window.start, side="left"))
        hi = int(np.searchsorted(self._times, query.window.end, side="left"))
        wanted = set(query.entities)
        return [s for s in self._spans[lo:hi] if not wanted or s.entity in wanted]


class StaticTopology:
    """A call graph known in advance."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self._graph = graph

    async def topology(self) -> nx.DiGraph:
        return self._graph


def topology_from_spans(spans: Iterable[Span]) -> nx.DiGraph:
    """Caller -> callee edges from parent/child spans of different entities, with call counts."""
    by_id = {}
    spans = list(spans)
    for s in spans:
        by_id[(s.trace_id, s.span_id)] = s.entity
    graph = nx.DiGraph()
    for s in spans:
        graph.add_node(s.entity)
        if not s.parent_id:
            continue
        caller = by_id.get((s.trace_id, s.parent_id))
        if caller is None or caller == s.entity:
            continue
        if graph.has_edge(caller, s.entity):
            graph[caller][s.entity]["calls"] += 1
        else:
            graph.add_edge(caller, s.entity, calls=1)
    return graph
