"""In-memory sources: what dataset adapters hand out once files are read, and what tests build."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import networkx as nx
import numpy as np
import pandas as pd

from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery
from rca.telemetry import LogRecord, Series, Span, SpanTable


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
    """Spans held in memory as columns, found by start time: the table as given (shared with
    whoever gave it) and the order that sorts it by start, not a sorted copy of every column."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self._table = SpanTable.of(spans)
        self._order = np.argsort(self._table.start, kind="stable")
        self._starts = self._table.start[self._order]

    async def spans(self, query: SpanQuery) -> SpanTable:
        lo = int(np.searchsorted(self._starts, query.window.start, side="left"))
        hi = int(np.searchsorted(self._starts, query.window.end, side="left"))
        return self._table.take(self._order[lo:hi]).of_entities(query.entities)


class StaticTopology:
    """A call graph known in advance."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self._graph = graph

    async def topology(self) -> nx.DiGraph:
        return self._graph


def topology_from_spans(spans: Iterable[Span]) -> nx.DiGraph:
    """Caller -> callee edges from parent/child spans of different entities, with call counts."""
    table = SpanTable.of(spans)
    graph = nx.DiGraph()
    graph.add_nodes_from(dict.fromkeys(table.entity.tolist()))  # in the order first seen
    child, parent = table.parent_pairs()
    if child.size:  # a span id met twice in one trace names one parent: the last read, as a lookup by id would
        last = pd.DataFrame({"child": child, "parent": parent}).groupby("child")["parent"].max()
        child, parent = last.index.to_numpy(), last.to_numpy()
    calls = pd.DataFrame({"caller": table.entity[parent], "callee": table.entity[child]})
    counts = calls[calls["caller"] != calls["callee"]].groupby(["caller", "callee"], sort=False).size()
    graph.add_edges_from((str(a), str(b), {"calls": int(n)}) for (a, b), n in counts.items())
    return graph
