"""The Nezha layout: `rca_data/<day>/` incidents with `construct_data/<day>/` as normal data.

    <root>/rca_data/<day>/<anything>fault_list.json   {"HH": [{inject_time, inject_pod, inject_type}]}
    <root>/rca_data/<day>/metric/*.csv[.gz]           per-pod series (PodName) or entry KPIs (ServiceName)
    <root>/rca_data/<day>/log/HH_MM_log.csv[.gz]      container logs, docker's JSON in `Log`
    <root>/rca_data/<day>/trace/HH_MM_trace.csv[.gz]  spans, ParentID `root` for a root span
    <root>/construct_data/<day>/{log,trace}/          a fault-free stretch of the same system

Only the layout is assumed: no service, pod or system name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar, cast

import networkx as nx
import numpy as np
import pandas as pd

from rca.errors import InputError, MalformedFile
from rca.model import (
    BrokenCase,
    CaseId,
    Incident,
    IncidentCase,
    Label,
    LogRecord,
    Modality,
    Normal,
    Series,
    Severity,
    Sources,
    SpanStatus,
    SpanTable,
    Window,
    fault_type_from_text,
)
from rca.sources.files import csv_files, read_csv, service_of_pod
from rca.sources.memory import InMemoryLogs, InMemoryMetrics, InMemoryTraces, topology_from_spans
from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery
from rca.timestamps import parse_timestamp
from rca.topology import KPI

log = logging.getLogger(__name__)
R = TypeVar("R")  # what one minute file reads into: log lines or a span table

_MINUTE_FILE = re.compile(r"^(\d{1,2})_(\d{2})(?:_|$)")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# "16:42:22.382 INFO  t.s.TravelServiceImpl#532 TraceID: abc SpanID: def [message]"
_JAVA_LINE = re.compile(
    r"^\S+\s+(?P<level>[A-Z]+)\s+(?P<loc>\S+)\s+"
    r"(?:TraceID:\s*(?P<tid>\S*)\s+SpanID:\s*\S*\s*)?(?P<msg>.*)$",
    re.DOTALL,
)
_LEVELS = {
    "TRACE": Severity.DEBUG, "DEBUG": Severity.DEBUG, "INFO": Severity.INFO,
    "WARN": Severity.WARNING, "WARNING": Severity.WARNING, "ERROR": Severity.ERROR,
    "SEVERE": Severity.ERROR, "FATAL": Severity.CRITICAL, "CRITICAL": Severity.CRITICAL,
}  # fmt: skip
_METRIC_META_COLUMNS = {"Time", "TimeStamp", "PodName", "ServiceName"}
# a per-call-edge latency file: `source_50.csv` holds each edge's median latency as its caller
# timed it, `destination_50.csv` as its callee did; one column per edge, named `caller_callee`
_EDGE_FILE = re.compile(r"^(source|destination)_(\d{1,2})$")
_EDGE_METRIC = {"source": "ClientLatencyP{q}(s)", "destination": "ServerLatencyP{q}(s)"}
NORMAL_LOOKBACK_SECONDS = 3600.0


def is_nezha_root(path: Path) -> bool:
    return (path / "rca_data").is_dir()


def minute_of(path: Path, day: str) -> Window | None:
    """The minute a `HH_MM_*` file covers, on its day; None for other names."""
    match = _MINUTE_FILE.match(path.name)
    if match is None or not _DAY.match(day):
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    start += hour * 3600 + minute * 60
    return Window(start, start + 60)


def parse_log_line(raw: str) -> tuple[Severity, str, str, str]:
    """Severity, code location, trace id and message of one container log line."""
    text = raw
    if raw.startswith("{"):
        try:
            payload = json.loads(raw)
            text = str(payload.get("log", raw)) if isinstance(payload, dict) else raw
        except json.JSONDecodeError:
            text = raw
    text = text.rstrip("\n")
    match = _JAVA_LINE.match(text)
    if match and match.group("level") in _LEVELS:
        return (
            _LEVELS[match.group("level")],
            match.group("loc"),
            match.group("tid") or "",
            match.group("msg"),
        )
    upper = text.upper()
    if "EXCEPTION" in upper or "ERROR" in upper:
        severity = Severity.ERROR
    elif "WARN" in upper:
        severity = Severity.WARNING
    else:
        severity = Severity.UNKNOWN
    return severity, "", "", text


def _nano_or_text(frame: pd.DataFrame, nano: str, text: str, path: Path) -> np.ndarray:
    if nano in frame.columns:
        values = pd.to_numeric(frame[nano], errors="coerce").to_numpy(dtype=float)
        if not np.isnan(values).any():
            return values / 1e9
    if text in frame.columns:
        try:
            return np.array([parse_timestamp(str(v)) for v in frame[text]], dtype=float)
        except InputError as exc:
            raise MalformedFile(path, str(exc)) from exc
    raise MalformedFile(path, f"no {nano} or {text} column")


def read_logs(path: Path) -> list[LogRecord]:
    """Container log records of one log file."""
    frame = read_csv(path, required=("PodName", "Log"), dtype=str, skip_bad_lines=True).fillna("")
    times = _nano_or_text(frame, "TimeUnixNano", "Timestamp", path)
    out = []
    for t, pod, trace_id, raw in zip(
        times, frame["PodName"], frame.get("TraceID", [""] * len(frame)), frame["Log"], strict=True
    ):
        severity, location, inner_tid, message = parse_log_line(raw)
        out.append(
            LogRecord(
                time=float(t), entity=service_of_pod(pod), severity=severity, message=message,
                trace_id=trace_id or inner_tid, instance=pod, location=location,
            )
        )  # fmt: skip
    return out


def read_spans(path: Path) -> SpanTable:
    """Spans of one trace file, as columns."""
    cols = ("TraceID", "SpanID", "ParentID", "PodName", "OperationName")
    text = {c: str for c in (*cols, "Status", "StartTime", "EndTime")}  # the nanosecond columns parse as numbers
    frame = read_csv(path, required=cols, dtype=text, skip_bad_lines=True)
    present = [c for c in text if c in frame.columns]
    frame[present] = frame[present].fillna("")
    pods = frame["PodName"]
    services = pods.map({pod: service_of_pod(pod) for pod in pods.unique()})
    parents = frame["ParentID"].where(~frame["ParentID"].isin(("", "root", "0", "null")), "")
    status = frame["Status"].str.lower() if "Status" in frame.columns else pd.Series("", index=frame.index)
    error = status.isin(("error", "2")).to_numpy()
    return SpanTable(
        trace_id=frame["TraceID"].to_numpy(dtype=object), span_id=frame["SpanID"].to_numpy(dtype=object),
        parent_id=parents.to_numpy(dtype=object), entity=services.to_numpy(dtype=object),
        operation=frame["OperationName"].to_numpy(dtype=object),
        start=_nano_or_text(frame, "StartTimeUnixNano", "StartTime", path).astype(float),
        end=_nano_or_text(frame, "EndTimeUnixNano", "EndTime", path).astype(float),
        status=np.where(error, SpanStatus.ERROR, SpanStatus.UNSET).astype(object), instance=pods.to_numpy(dtype=object),
    )  # fmt: skip


_STRAY_SECONDS = 86_400.0  # a sample time a day or more from the rest of its file was misrecorded


def read_metrics(path: Path, notes: list[str] | None = None) -> tuple[list[Series], bool]:
    """Series of one metric file, one per numeric column, and whether it holds entry KPIs.

    A file keyed by PodName holds a pod's series (entity: its workload); one keyed by
    ServiceName holds the KPIs measured at the system's entry (entity: that name). A
    TimeStamp a day or more from the file's median is misrecorded: its row's Time stands
    instead where it agrees with the file, else the row is left out; either is said in
    `notes` (the case's data-quality notes), never placed silently.
    """
    frame = read_csv(path)
    if "PodName" in frame.columns:
        key = "PodName"
    elif "ServiceName" in frame.columns:
        key = "ServiceName"
    elif _EDGE_FILE.match(path.stem):
        return read_edge_latencies(path, frame, notes), False
    else:
        raise MalformedFile(path, "neither a PodName nor a ServiceName column")
    if "TimeStamp" in frame.columns:
        times = pd.to_numeric(frame["TimeStamp"], errors="coerce").to_numpy(dtype=float)
    elif "Time" in frame.columns:
        times = np.array([parse_timestamp(str(v)) for v in frame["Time"]], dtype=float)
    else:
        raise MalformedFile(path, "no TimeStamp or Time column")
    times, frame = _stray_times_set_right(path, frame, times, notes)
    out = []
    for instance, part in frame.groupby(key, sort=False):
        idx = part.index.to_numpy()
        ts = times[idx]
        order = np.argsort(ts, kind="stable")
        entity = service_of_pod(str(instance)) if key == "PodName" else str(instance)
        for col in frame.columns:
            if col in _METRIC_META_COLUMNS:
                continue
            values = pd.to_numeric(part[col], errors="coerce").to_numpy(dtype=float)
            out.append(Series(entity, str(col), ts[order], values[order], str(instance)))
    return out, key == "ServiceName"


def read_edge_latencies(path: Path, frame: pd.DataFrame, notes: list[str] | None = None) -> list[Series]:
    """Series of a per-call-edge latency file (`source_50.csv`: each call's median latency as
    its caller timed it; `destination_50.csv`: as its callee did). Both measure the calls to
    the callee, so both are the callee's series (client and server latency, the instance naming
    the edge): a caller's view of a slow callee is the callee's symptom, not the caller's, and
    the two sides part where the network between them delays the calls. A column that names no
    `caller_callee` pair is left out and said in `notes`."""
    side, quantile = cast(re.Match[str], _EDGE_FILE.match(path.stem)).groups()
    column = next((c for c in frame.columns if c.lower() == "timestamp"), None)
    if column is None:
        raise MalformedFile(path, "no timestamp column")
    times = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    times, frame = _stray_times_set_right(path, frame, times, notes)
    order = np.argsort(times, kind="stable")
    metric = _EDGE_METRIC[side].format(q=quantile)
    out, unnamed = [], []
    for col in frame.columns:
        if col.lower() in ("time", "timestamp"):
            continue
        caller, _, callee = str(col).partition("_")
        if not caller or not callee or "_" in callee:
            unnamed.append(str(col))
            continue
        values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)
        out.append(Series(callee, metric, times[order], values[order], f"{caller}->{callee}"))
    if unnamed and notes is not None:
        notes.append(f"metric file {path.name}: {len(unnamed)} column(s) that name no caller_callee edge left out "
                     f"({', '.join(unnamed[:3])})")  # fmt: skip
    return out


def _stray_times_set_right(path: Path, frame: pd.DataFrame, times: np.ndarray,
                           notes: list[str] | None) -> tuple[np.ndarray, pd.DataFrame]:  # fmt: skip
    """The file's times with misrecorded ones set right from the Time column, or their rows
    left out; what was done is said in `notes`."""
    finite = np.isfinite(times)
    if not finite.any():
        return times, frame
    stray = finite & (np.abs(times - np.median(times[finite])) >= _STRAY_SECONDS)
    if not stray.any():
        return times, frame
    times = times.copy()
    fixed = 0
    if "Time" in frame.columns:
        centre = float(np.median(times[finite & ~stray]))
        for i in np.flatnonzero(stray):
            try:
                t = parse_timestamp(str(frame["Time"].iloc[i]))
            except InputError:
                continue
            if abs(t - centre) < _STRAY_SECONDS:
                times[i], stray[i] = t, False
                fixed += 1
    what = []
    if fixed:
        what.append(f"{fixed} set right from its Time column")
    if stray.any():
        what.append(f"{int(stray.sum())} left out")
    if notes is not None:
        notes.append(f"metric file {path.name}: {fixed + int(stray.sum())} sample time(s) a day or more from the "
                     f"rest of the file ({', '.join(what)})")  # fmt: skip
    log.warning("%s: misrecorded sample times (%s)", path, ", ".join(what))
    keep = ~stray
    return times[keep], frame.loc[keep].reset_index(drop=True)


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
    key = pd.DataFrame({"trace": merged.trace_id[rows], "span": merged.span_id[rows], "entity": merged.entity[rows],
                        "start": merged.start[rows]})  # fmt: skip
    keep = np.ones(len(merged), dtype=bool)
    keep[rows[key.duplicated().to_numpy()]] = False
    return merged.take(keep)


# a minute file is named for its last minute and may hold up to this much before it
MINUTE_FILE_REACH = 180.0


class _Folder:
    """One `<day>` folder: metric files read once, minute files read on demand, all cached."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.day = path.name
        self._lock = threading.Lock()
        self._metrics: list[Series] | None = None
        self._kpi: set[str] = set()
        self._skipped: list[str] = []  # metric-folder files that hold no series, or misrecorded times, and why
        self._minutes: dict[Path, object] = {}  # a file's log lines or spans
        # what the same files read together give, computed once: merged records, span
        # indexes, call graphs (keyed by what it is and the files)
        self._kept: dict[tuple[str, str, tuple[Path, ...]], object] = {}

    def has(self, kind: str) -> bool:
        return bool(csv_files(self.path / kind))

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

    def _records(self, kind: str, window: Window | None, reader: Callable[[Path], R],
                 merge: Callable[[list[R]], R]) -> R:  # fmt: skip
        """The records of a kind's minute files that touch the window, each once.

        The publisher's minute files overlap (one may hold the whole of the next), so a
        record met again in another file is the same line or span, not a second one.
        """

        def read(files: tuple[Path, ...]) -> R:
            parts: list[R] = []
            for f in files:
                with self._lock:
                    if f not in self._minutes:
                        self._minutes[f] = reader(f)
                    parts.append(cast(R, self._minutes[f]))
            return merge(parts)

        return self._keep("records", kind, window, read)

    def _keep(self, what: str, kind: str, window: Window | None, make: Callable[[tuple[Path, ...]], R]) -> R:
        """What `make` gives for the kind's minute files that touch the window, made once."""
        files = tuple(self._minute_files(kind, window))
        key = (what, kind, files)  # no files of either kind would otherwise share a key
        with self._lock:
            found = self._kept.get(key)
        if found is None:
            found = make(files)
            with self._lock:
                self._kept[key] = found
        return cast(R, found)

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


class _FolderMetrics:
    """Metrics of a day folder in the query's window, or of a fault-free folder whole."""

    def __init__(self, folder: _Folder, *, whole: bool = False) -> None:
        self._folder = folder
        self._whole = whole

    async def entities(self) -> tuple[str, ...]:
        return await InMemoryMetrics(self._folder.metrics()).entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        if self._whole:
            everything = Window(-1e12, 1e12)
            return await InMemoryMetrics(self._folder.metrics()).series(replace(query, window=everything))
        return await InMemoryMetrics(self._folder.metrics()).series(query)


class _FolderLogs:
    """Logs of a day folder in the query's window, or of a fault-free folder whole."""

    def __init__(self, folder: _Folder, *, whole: bool = False) -> None:
        self._folder = folder
        self._whole = whole

    async def records(self, query: LogQuery) -> list[LogRecord]:
        if self._whole:
            wanted = set(query.entities)
            return [r for r in self._folder.logs(None) if not wanted or r.entity in wanted]
        return await InMemoryLogs(self._folder.logs(query.window)).records(query)


class _FolderTraces:
    """Spans of a day folder in the query's window, or of a fault-free folder whole."""

    def __init__(self, folder: _Folder, *, whole: bool = False) -> None:
        self._folder = folder
        self._whole = whole

    async def spans(self, query: SpanQuery) -> SpanTable:
        if self._whole:
            return self._folder.spans(None).of_entities(query.entities)
        return await self._folder.span_index(query.window).spans(query)


class _FolderTopology:
    """The call graph from the normal stretch's spans and the incident's own, plus KPI entities."""

    def __init__(
        self, parts: tuple[tuple[_Folder, Window | None], ...], kpi_entities: tuple[str, ...]
    ) -> None:
        self._parts = parts
        self._kpi = kpi_entities
        self._graph: nx.DiGraph | None = None

    def over(self, window: Window) -> _FolderTopology:
        """The same call graph for another window of the incident's day: its spans replace
        the old window's."""
        return _FolderTopology(tuple((f, w if w is None else window) for f, w in self._parts), self._kpi)

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


@dataclass(frozen=True, slots=True)
class _Fault:
    time: float
    pod: str
    kind: str


def _read_faults(day: Path, name: str = "", broken: list[BrokenCase] | None = None) -> list[_Fault]:
    lists = sorted(day.glob("*fault_list*.json"))
    faults: list[_Fault] = []
    for path in lists:
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise MalformedFile(path, "expected an object of hours")
        except (OSError, json.JSONDecodeError, MalformedFile) as exc:
            error = exc if isinstance(exc, MalformedFile) else MalformedFile(path, f"not JSON: {exc}")
            if broken is None:
                raise error from exc
            broken.append(BrokenCase(CaseId(f"{name}/{day.name}/{path.name}"), name, str(error)))
            continue
        for i, e in enumerate(e for entries in data.values() for e in (entries if isinstance(entries, list) else [])):
            try:
                faults.append(_Fault(parse_timestamp(str(e["inject_time"])), str(e["inject_pod"]), str(e["inject_type"])))
            except (KeyError, TypeError, InputError) as exc:
                error = MalformedFile(path, f"bad fault entry {e!r}: {exc}")
                if broken is None:
                    raise error from exc
                broken.append(BrokenCase(CaseId(f"{name}/{day.name}/entry-{i + 1}"), name, str(error)))
    return sorted(faults, key=lambda f: f.time)


def case_window(case_id: str, inject: float) -> Window:
    """A window around the injection whose offsets vary by case, so it does not reveal the time.

    It starts 4-8 minutes before and ends 3-6 minutes after, as an engineer's `/rca ... 10m`
    typed a few minutes into an incident would.
    """
    digest = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:4], "big")
    before = 240 + digest % 240
    after = 180 + (digest >> 12) % 180
    return Window(inject - before, inject + after)


def load_nezha(root: Path, *, dataset: str | None = None, broken: list[BrokenCase] | None = None) -> list[IncidentCase]:
    """Every labelled fault under a Nezha-layout root (a fault list that cannot be read, or an
    entry of it, goes to `broken` where given, else raises MalformedFile)."""
    name = dataset or root.name
    cases = []
    for day_path in sorted(p for p in (root / "rca_data").iterdir() if p.is_dir()):
        faults = _read_faults(day_path, name, broken)
        if not faults:
            continue
        folder = _Folder(day_path)
        normal_path = root / "construct_data" / day_path.name
        normal = _Folder(normal_path) if normal_path.is_dir() else None
        cases.extend(_day_cases(name, folder, normal, faults))
    return cases


def _day_cases(
    name: str, folder: _Folder, normal: _Folder | None, faults: list[_Fault]
) -> list[IncidentCase]:
    kpi = folder.kpi_entities() if folder.has("metric") else ()
    out = []
    for fault in faults:
        clock = datetime.fromtimestamp(fault.time, tz=UTC).strftime("%H:%M:%S")
        case_id = CaseId(f"{name}/{folder.day}/{clock}")
        incident = day_incident(name, folder, normal, case_id, case_window(case_id, fault.time), kpi=kpi)
        label = Label(service_of_pod(fault.pod), fault_type_from_text(fault.kind), fault.kind, fault.time)
        out.append(IncidentCase(incident, label))
    return out


def day_incident(name: str, folder: _Folder, normal: _Folder | None, case_id: CaseId, window: Window, *,
                 kpi: tuple[str, ...] = (), symptom: str = "") -> Incident:  # fmt: skip
    """The incident of one window of a day folder (unlabelled: the label is the caller's)."""
    has_metrics, has_logs, has_traces = folder.has("metric"), folder.has("log"), folder.has("trace")
    topo_parts: list[tuple[_Folder, Window | None]] = []
    if normal is not None and normal.has("trace"):
        topo_parts.append((normal, None))
    if has_traces:
        topo_parts.append((folder, window))
    sources = Sources(
        metrics=_FolderMetrics(folder) if has_metrics else None,
        logs=_FolderLogs(folder) if has_logs else None,
        traces=_FolderTraces(folder) if has_traces else None,
        topology=_FolderTopology(tuple(topo_parts), kpi) if topo_parts else None,
    )
    # Normal behaviour: the hour before the window, and for logs and traces also the
    # layout's fault-free stretch (construct_data), read whole.
    lookback = Window(window.start - NORMAL_LOOKBACK_SECONDS, window.start)
    normals: dict[Modality, Normal] = {}
    if has_metrics:
        free_metrics = normal if normal is not None and normal.has("metric") else None
        normals[Modality.METRICS] = Normal(
            lookback, sources, Sources(metrics=_FolderMetrics(free_metrics, whole=True)) if free_metrics else None
        )
    free_logs = normal if normal is not None and normal.has("log") else None
    free_traces = normal if normal is not None and normal.has("trace") else None
    if has_logs or free_logs:
        normals[Modality.LOGS] = Normal(
            lookback, Sources(logs=sources.logs), Sources(logs=_FolderLogs(free_logs, whole=True)) if free_logs else None
        )
    if has_traces or free_traces:
        normals[Modality.TRACES] = Normal(
            lookback, Sources(traces=sources.traces), Sources(traces=_FolderTraces(free_traces, whole=True)) if free_traces else None
        )
    symptom = symptom or (kpi[0] if kpi else _entry_service(folder, normal, window))
    return Incident(
        id=case_id, dataset=name, symptom=symptom, window=window, sources=sources,
        normal=normals, notes=tuple(_notes(sources, folder, normal)),
    )  # fmt: skip


def recording(root: Path, *, case_id: str, symptom: str, window: Window) -> Incident:
    """An unlabelled window of a Nezha-layout folder (a snapshot rcabot wrote)."""
    days = sorted(p for p in (root / "rca_data").iterdir() if p.is_dir() and _DAY.match(p.name))
    if len(days) != 1:
        raise MalformedFile(root / "rca_data", f"a recording holds one day folder, found {len(days)}")
    return day_incident(root.name, _Folder(days[0]), None, CaseId(case_id), window, symptom=symptom)


def _entry_service(folder: _Folder, normal: _Folder | None, window: Window) -> str:
    """The service that receives requests from outside: the most frequent root-span entity."""
    for f, w in ((normal, None), (folder, window)):
        if f is not None and f.has("trace"):
            _, roots = f.calls(w)
            if roots:
                return roots.most_common(1)[0][0]
    return ""


def _notes(sources: Sources, folder: _Folder, normal: _Folder | None) -> list[str]:
    notes = [f"{m}: absent" for m, ok in sources.modalities().items() if not ok]
    if normal is None:
        notes.append("normal logs/traces: absent (no construct_data for this day)")
    if sources.metrics is not None:
        notes.extend(folder.skipped())
    return notes
