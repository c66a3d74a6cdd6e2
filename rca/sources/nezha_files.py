"""The files of the Nezha layout read into the engine's records: a minute file's log lines,
its spans, a metric file's series (per pod, or the entry's KPIs) and a per-call-edge latency
file's series, with the data-quality notes reading them gave (rca.sources.nezha lays them
out as incidents)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from rca.errors import InputError, MalformedFile
from rca.sources.files import read_csv, service_of_pod, shared
from rca.telemetry import LogRecord, Series, Severity, SpanStatus, SpanTable
from rca.timestamps import parse_timestamp

log = logging.getLogger(__name__)

# "16:42:22.382 INFO  t.s.TravelServiceImpl#532 TraceID: abc SpanID: def [message]"
_JAVA_LINE = re.compile(
    r"^\S+\s+(?P<level>[A-Z]+)\s+(?P<loc>\S+)\s+"
    r"(?:TraceID:\s*(?P<tid>\S*)\s+SpanID:\s*\S*\s*)?(?P<msg>.*)$",
    re.DOTALL,
)
_LEVELS = {
    "TRACE": Severity.DEBUG,
    "DEBUG": Severity.DEBUG,
    "INFO": Severity.INFO,
    "WARN": Severity.WARNING,
    "WARNING": Severity.WARNING,
    "ERROR": Severity.ERROR,
    "SEVERE": Severity.ERROR,
    "FATAL": Severity.CRITICAL,
    "CRITICAL": Severity.CRITICAL,
}
_METRIC_META_COLUMNS = {"Time", "TimeStamp", "PodName", "ServiceName"}
# a per-call-edge latency file: `source_50.csv` holds each edge's median latency as its caller
# timed it, `destination_50.csv` as its callee did; one column per edge, named `caller_callee`
_EDGE_FILE = re.compile(r"^(source|destination)_(\d{1,2})$")
_EDGE_METRIC = {"source": "ClientLatencyP{q}(s)", "destination": "ServerLatencyP{q}(s)"}


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
    """Container log records of one log file. A pod, its service, a code location and a trace
    id repeat from line to line: each distinct text is held once."""
    frame = read_csv(path, required=("PodName", "Log"), dtype=str, skip_bad_lines=True).fillna("")
    times = _nano_or_text(frame, "TimeUnixNano", "Timestamp", path)
    once: dict[str, str] = {}
    services: dict[str, str] = {}
    out = []
    for t, pod, trace_id, raw in zip(
        times, frame["PodName"], frame.get("TraceID", [""] * len(frame)), frame["Log"], strict=True
    ):
        severity, location, inner_tid, message = parse_log_line(raw)
        pod = once.setdefault(pod, pod)
        if pod not in services:
            services[pod] = service_of_pod(pod)
        trace_id = trace_id or inner_tid
        out.append(
            LogRecord(
                time=float(t),
                entity=services[pod],
                severity=severity,
                message=once.setdefault(message, message),
                trace_id=once.setdefault(trace_id, trace_id),
                instance=pod,
                location=once.setdefault(location, location),
            )
        )
    return out


def read_spans(path: Path) -> SpanTable:
    """Spans of one trace file, as columns."""
    cols = ("TraceID", "SpanID", "ParentID", "PodName", "OperationName")
    text = {c: str for c in (*cols, "Status", "StartTime", "EndTime")}  # the nanosecond columns parse as numbers
    frame = read_csv(path, required=cols, dtype=text, skip_bad_lines=True)
    present = [c for c in text if c in frame.columns]
    frame[present] = frame[present].fillna("")
    pods = shared(frame["PodName"])
    services = {pod: service_of_pod(pod) for pod in set(pods)}
    parents = frame["ParentID"].where(~frame["ParentID"].isin(("", "root", "0", "null")), "")
    status = frame["Status"].str.lower() if "Status" in frame.columns else pd.Series("", index=frame.index)
    statuses = np.empty(len(frame), dtype=object)
    statuses.fill(SpanStatus.UNSET)  # the member itself in every row (np.full would copy its text)
    statuses[status.isin(("error", "2")).to_numpy()] = SpanStatus.ERROR
    span_ids = frame["SpanID"].to_numpy(dtype=object)
    return SpanTable(
        trace_id=shared(frame["TraceID"]),
        span_id=span_ids,
        parent_id=shared(parents, held=span_ids),  # a parent's id is its span's, not a copy
        entity=pd.Series(pods).map(services).to_numpy(dtype=object),
        operation=shared(frame["OperationName"]),
        start=_nano_or_text(frame, "StartTimeUnixNano", "StartTime", path).astype(float),
        end=_nano_or_text(frame, "EndTimeUnixNano", "EndTime", path).astype(float),
        status=statuses,
        instance=pods,
    )


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
        at = ts[order]  # one clock for every series of the instance, read only
        at.flags.writeable = False
        entity = service_of_pod(str(instance)) if key == "PodName" else str(instance)
        for col in frame.columns:
            if col in _METRIC_META_COLUMNS:
                continue
            values = pd.to_numeric(part[col], errors="coerce").to_numpy(dtype=float)
            out.append(Series(entity, str(col), at, values[order], str(instance)))
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
        notes.append(
            f"metric file {path.name}: {len(unnamed)} column(s) that name no caller_callee edge left out "
            f"({', '.join(unnamed[:3])})"
        )
    return out


def _stray_times_set_right(
    path: Path, frame: pd.DataFrame, times: np.ndarray, notes: list[str] | None
) -> tuple[np.ndarray, pd.DataFrame]:
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
        notes.append(
            f"metric file {path.name}: {fixed + int(stray.sum())} sample time(s) a day or more from the "
            f"rest of the file ({', '.join(what)})"
        )
    log.warning("%s: misrecorded sample times (%s)", path, ", ".join(what))
    keep = ~stray
    return times[keep], frame.loc[keep].reset_index(drop=True)
