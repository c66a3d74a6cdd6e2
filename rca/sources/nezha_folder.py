"""One day's folder of the Nezha layout (`rca_data/<day>/` or `construct_data/<day>/`) read
as the engine's sources: its metrics, its minute files of logs and spans (only those a window
reaches, each read once), and the call graph its spans show (rca.sources.nezha makes
incidents of them)."""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar, cast

import networkx as nx
import numpy as np
import pandas as pd

from rca.changes import Change
from rca.errors import MalformedFile
from rca.sources.change_files import CHANGES_FILE, read_changes
from rca.sources.files import csv_files
from rca.sources.memory import InMemoryLogs, InMemoryMetrics, InMemoryTraces, topology_from_spans
from rca.sources.nezha_files import read_logs, read_metrics, read_spans
from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery
from rca.telemetry import LogRecord, Series, SpanTable, Window
from rca.topology import KPI

log = logging.getLogger(__name__)
R = TypeVar("R")  # what one minute file reads into: log lines or a span table
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")  # a day's folder
_MINUTE_FILE = re.compile(r"^(\d{1,2})_(\d{2})(?:_|$)")


def minute_of(path: Path, day: str) -> Window | None:
    """The minute a `HH_MM_*` file covers, on its day; None for other names."""
    match = _MINUTE_FILE.match(path.name)
    if match is None or not DAY.match(day):
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    start += hour * 3600 + minute * 60
    return Window(start, start + 60)


def _merge_logs(parts: Sequence[list[LogRecord]]) -> list[LogRecord]:
    """The records of overlapping files, each line once (its time, pod and text)."""
    merged: list[LogRecord] = []
    seen: set[tuple] = set()
    for r in (r for part in parts for r in part):
        key = (r.time, r.instance, r.message)
        if key not in seen:
            seen.add(key)
            merged.append(r)
    return merged


def _merge_spans(parts: Sequence[SpanTable]) -> SpanTable:
    """The spans of overlapping files, each span once (its trace, id, service and start)."""
    merged = SpanTable.concat(parts)
    # only spans whose id and start met again can be one span twice: the whole identity is
    # compared among those few (hashing every column of every span cost more than the rest)
    again = pd.DataFrame({"span": merged.span_id, "start": merged.start}).duplicated(keep=False).to_numpy()
    if not again.any():
        return merged
    rows = np.flatnonzero(again)
    key = pd.DataFrame(
        {
            "trace": merged.trace_id[rows],
            "span": merged.span_id[rows],
            "entity": merged.entity[rows],
            "start": merged.start[rows],
        }
    )
    keep = np.ones(len(merged), dtype=bool)
    keep[rows[key.duplicated().to_numpy()]] = False
    return merged.take(keep)


# a minute file is named for its last minute and may hold up to this much before it
MINUTE_FILE_REACH = 180.0


# Windows of one kind kept made (merged records, span indexes, call graphs), over every folder
# of the process: an investigation, its audit and every engine of an evaluation read at most
# three windows of a kind (the window, its look-back and the fault-free stretch whole), so four
# keep the case at hand and one window more; what a case made is not read again by the next
# (each has its own window), nor a day an evaluation has left, so more only holds memory (two
# investigations at once may read a window twice).
KEPT_WINDOWS = 4

_Key = tuple[str, str, tuple[Path, ...]]  # what it is, the kind of minute files, the files


class Kept:
    """What day folders made of their minute files, kept across folders: the KEPT_WINDOWS
    windows of each (what, kind) read last, and the minute files they hold. Shared by every
    folder of the process (`SHARED`), so that an evaluation that moves from day to day, or
    from recording to recording, holds the windows at hand, not the last few of each day."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.minutes: dict[Path, object] = {}  # a file's log lines or spans, while a kept window holds it
        # what the same files read together give, computed once (keyed by what it is and the
        # files), the least recent first
        self.made: OrderedDict[_Key, object] = OrderedDict()

    def evict(self, what: str, kind: str) -> None:
        """Forget the least recent of more than KEPT_WINDOWS windows of (what, kind), and the
        minute files no kept window holds any longer (called with the lock held)."""
        same = [k for k in self.made if k[0] == what and k[1] == kind]
        if len(same) <= KEPT_WINDOWS:
            return
        for k in same[: len(same) - KEPT_WINDOWS]:
            del self.made[k]
        held = {f for k in self.made for f in k[2]}
        for f in [f for f in self.minutes if f not in held]:
            del self.minutes[f]


SHARED = Kept()


class Folder:
    """One `<day>` folder: metric files read once, minute files read on demand. What the last
    few windows made is kept (KEPT_WINDOWS of each kind, in `kept`, shared by every folder
    unless another is given), and the minute files they hold."""

    def __init__(self, path: Path, *, kept: Kept = SHARED) -> None:
        self.path = path
        self.day = path.name
        self._lock = threading.Lock()
        self._metrics: list[Series] | None = None
        self._kpi: set[str] = set()
        self._changes: tuple[Change, ...] | None = None
        self._skipped: list[str] = []  # metric-folder files that hold no series, or misrecorded times, and why
        self._kept = kept

    def has(self, kind: str) -> bool:
        return bool(csv_files(self.path / kind))

    def changes(self) -> tuple[Change, ...]:
        """The changes the folder's `changes.jsonl` records (a lab recording's, a snapshot's)."""
        with self._lock:
            if self._changes is None:
                path = self.path / CHANGES_FILE
                self._changes = tuple(read_changes(path)) if path.is_file() else ()
            return self._changes

    def metrics(self) -> list[Series]:
        with self._lock:
            if self._metrics is None:
                series: list[Series] = []
                for f in csv_files(self.path / "metric"):
                    try:
                        found, is_kpi = read_metrics(f, self._skipped)
                    except MalformedFile as e:  # another kind of file (a call list) or a broken one
                        log.warning("%s", e)
                        self._skipped.append(f"metric file {f.name} skipped: {e.reason}")
                        continue
                    series.extend(found)
                    if is_kpi:
                        self._kpi.update(s.entity for s in found)
                self._metrics = series
            return self._metrics

    def skipped(self) -> tuple[str, ...]:
        """What was left out of the metric folder or set right in it, and why."""
        self.metrics()
        return tuple(self._skipped)

    def kpi_entities(self) -> tuple[str, ...]:
        """Entities whose series are entry KPIs rather than a workload's own."""
        self.metrics()
        return tuple(sorted(self._kpi))

    def _minute_files(self, kind: str, window: Window | None) -> Iterator[Path]:
        reach = None if window is None else Window(window.start, window.end + MINUTE_FILE_REACH)
        for f in csv_files(self.path / kind):
            span = minute_of(f, self.day)
            if reach is None or span is None or span.overlaps(reach):
                yield f

    def logs(self, window: Window | None) -> list[LogRecord]:
        """The log lines of the minute files that touch the window (every file for None)."""
        return self._records("log", window, read_logs, _merge_logs)

    def spans(self, window: Window | None) -> SpanTable:
        """The spans of the minute files that touch the window (every file for None)."""
        return self._records("trace", window, read_spans, _merge_spans)

    def span_index(self, window: Window) -> InMemoryTraces:
        """The spans of the minute files that touch the window, sorted by start for cutting
        (kept: an investigation and its audit cut the same files)."""
        return self._keep("index", "trace", window, lambda _: InMemoryTraces(self.spans(window)))

    def calls(self, window: Window | None) -> tuple[nx.DiGraph, Counter[str]]:
        """The call graph of the spans of the minute files that touch the window, and how
        many traces each service was the root of (kept: the fault-free folder's serves
        every window of its day)."""

        def build(_: tuple[Path, ...]) -> tuple[nx.DiGraph, Counter[str]]:
            spans = self.spans(window)
            return topology_from_spans(spans), Counter(spans.entity[spans.parent_id == ""].tolist())

        return self._keep("calls", "trace", window, build)

    def _records(
        self, kind: str, window: Window | None, reader: Callable[[Path], R], merge: Callable[[list[R]], R]
    ) -> R:
        """The records of a kind's minute files that touch the window, each once.

        The publisher's minute files overlap (one may hold the whole of the next), so a
        record met again in another file is the same line or span, not a second one.
        """

        def read(files: tuple[Path, ...]) -> R:
            parts: list[R] = []
            for f in files:
                with self._kept.lock:
                    if f not in self._kept.minutes:
                        self._kept.minutes[f] = reader(f)
                    parts.append(cast(R, self._kept.minutes[f]))
            return merge(parts)

        return self._keep("records", kind, window, read)

    def _keep(self, what: str, kind: str, window: Window | None, make: Callable[[tuple[Path, ...]], R]) -> R:
        """What `make` gives for the kind's minute files that touch the window, made once."""
        files = tuple(self._minute_files(kind, window))
        key = (what, kind, files)  # no files of either kind would otherwise share a key
        kept = self._kept
        with kept.lock:
            found = kept.made.get(key)
            if found is not None:
                kept.made.move_to_end(key)
        if found is None:
            found = make(files)
            with kept.lock:
                kept.made[key] = found
                kept.evict(what, kind)
        return cast(R, found)

    def holding(self) -> dict[str, int]:
        """What the caches hold of this folder: windows kept by what and kind, and minute files."""
        with self._kept.lock:
            mine = [k for k in self._kept.made if all(f.is_relative_to(self.path) for f in k[2])]
            held = Counter(f"{what} {kind}" for what, kind, _ in mine)
            return {**held, "minute files": sum(f.is_relative_to(self.path) for f in self._kept.minutes)}

    def nearest(self, kind: str, window: Window) -> Window | None:
        """The time of the kind's minute file nearest to the window, from the files' names."""
        spans = [w for f in csv_files(self.path / kind) if (w := minute_of(f, self.day))]
        return min(spans, key=lambda w: abs(w.start - window.start), default=None)

    def covered(self, kind: str) -> Window | None:
        """The time covered by a kind's minute files, from their names."""
        spans = [w for f in csv_files(self.path / kind) if (w := minute_of(f, self.day))]
        if not spans:
            return None
        return Window(min(w.start for w in spans), max(w.end for w in spans))


class FolderMetrics:
    """Metrics of a day folder in the query's window, or of a fault-free folder whole."""

    def __init__(self, folder: Folder, *, whole: bool = False) -> None:
        self._folder = folder
        self._whole = whole

    async def entities(self) -> tuple[str, ...]:
        return await InMemoryMetrics(self._folder.metrics()).entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        if self._whole:
            everything = Window(-1e12, 1e12)
            return await InMemoryMetrics(self._folder.metrics()).series(replace(query, window=everything))
        return await InMemoryMetrics(self._folder.metrics()).series(query)


class FolderLogs:
    """Logs of a day folder in the query's window, or of a fault-free folder whole."""

    def __init__(self, folder: Folder, *, whole: bool = False) -> None:
        self._folder = folder
        self._whole = whole

    async def records(self, query: LogQuery) -> list[LogRecord]:
        if self._whole:
            wanted = set(query.entities)
            return [r for r in self._folder.logs(None) if not wanted or r.entity in wanted]
        return await InMemoryLogs(self._folder.logs(query.window)).records(query)


class FolderTraces:
    """Spans of a day folder in the query's window, or of a fault-free folder whole."""

    def __init__(self, folder: Folder, *, whole: bool = False) -> None:
        self._folder = folder
        self._whole = whole

    async def spans(self, query: SpanQuery) -> SpanTable:
        if self._whole:
            return self._folder.spans(None).of_entities(query.entities)
        return await self._folder.span_index(query.window).spans(query)


class FolderTopology:
    """The call graph from the normal stretch's spans and the incident's own, plus KPI entities."""

    def __init__(self, parts: tuple[tuple[Folder, Window | None], ...], kpi_entities: tuple[str, ...]) -> None:
        self._parts = parts
        self._kpi = kpi_entities
        self._graph: nx.DiGraph | None = None

    def over(self, window: Window) -> FolderTopology:
        """The same call graph for another window of the incident's day: its spans replace
        the old window's."""
        return FolderTopology(tuple((f, w if w is None else window) for f, w in self._parts), self._kpi)

    async def topology(self) -> nx.DiGraph:
        if self._graph is None:
            parts = [f.calls(w) for f, w in self._parts]
            if not any(g.number_of_nodes() for g, _ in parts):  # no span in these minutes: the nearest minute's calls
                near = [(f, n) for f, w in self._parts if w is not None and (n := f.nearest("trace", w))]
                parts = [f.calls(n) for f, n in near[:1]]
            graph = nx.DiGraph()
            roots: Counter[str] = Counter()
            for g, r in parts:  # each part's traces are its own: the graphs add up
                graph.add_nodes_from(g.nodes)
                for a, b, calls in g.edges(data="calls"):
                    graph.add_edge(a, b, calls=calls + (graph[a][b]["calls"] if graph.has_edge(a, b) else 0))
                roots.update(r)
            for kpi in self._kpi:  # entry KPIs are measured in front of the root services
                graph.add_node(kpi, **{KPI: True})
                for root in roots:
                    graph.add_edge(kpi, root, calls=roots[root])
            self._graph = graph
        return self._graph
