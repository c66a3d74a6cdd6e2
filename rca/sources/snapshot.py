"""Snapshots: what an investigation read from live backends, saved in the Nezha layout so the
same investigation can be replayed and audited later, offline.

    DIR/rcabot-snapshot.json             symptom, window, when, from which backends, what was missing
    DIR/rca_data/<day>/metric/<pod>_metric.csv    TimeStamp, PodName, one column per metric
    DIR/rca_data/<day>/metric/<symptom>_kpi.csv   TimeStamp, ServiceName, ... (the symptom's own series)
    DIR/rca_data/<day>/log/HH_MM_log.csv          TimeUnixNano, PodName, TraceID, Log
    DIR/rca_data/<day>/trace/HH_MM_trace.csv      TraceID, SpanID, ParentID, PodName, OperationName, ...

The window and the hour before it (the normal period) are saved; both must lie in one UTC day.
Telemetry text is written as read (redaction applies where text leaves for a model or Slack).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from rca.errors import InputError, MalformedFile
from rca.model import Incident, Sources
from rca.sources.files import service_of_pod
from rca.sources.nezha import NORMAL_LOOKBACK_SECONDS, recording
from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery
from rca.telemetry import LogRecord, Series, Span, SpanStatus, Window, to_iso
from rca.timestamps import parse_timestamp

MANIFEST = "rcabot-snapshot.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_LEVEL_NAMES = {0: "UNKNOWN", 10: "DEBUG", 20: "INFO", 30: "WARN", 40: "ERROR", 50: "FATAL"}


def is_snapshot(path: Path) -> bool:
    return (path / MANIFEST).is_file()


def load_snapshot(path: Path) -> Incident:
    """The unlabelled incident a snapshot holds."""
    try:
        doc = json.loads((path / MANIFEST).read_text())
        window = Window(parse_timestamp(doc["window"]["start"]), parse_timestamp(doc["window"]["end"]))
        symptom = str(doc["symptom"])
    except (OSError, ValueError, KeyError, TypeError, InputError) as exc:
        raise MalformedFile(path / MANIFEST, f"not an rcabot snapshot manifest ({exc})") from exc
    return recording(path, case_id=f"snapshot/{path.name}/{window.to_iso()}", symptom=symptom, window=window)


async def write_snapshot(incident: Incident, out: Path, *, origin: dict[str, str], created: float) -> Path:
    """Read the incident's window (and the hour before) from its sources and save it under `out`."""
    span = Window(incident.window.start - NORMAL_LOOKBACK_SECONDS, incident.window.end)
    day = datetime.fromtimestamp(span.start, UTC).strftime("%Y-%m-%d")
    if datetime.fromtimestamp(span.end - 1e-6, UTC).strftime("%Y-%m-%d") != day:
        raise InputError(
            "a snapshot (the window and the hour before it) must lie within one UTC day; split the window at midnight"
        )
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} exists and is not empty: choose a new directory")
    src, missing = incident.sources, list(incident.missing())
    await write_days(src, span, out, symptom=incident.symptom)
    manifest = {
        "symptom": incident.symptom,
        "window": {"start": to_iso(incident.window.start), "end": to_iso(incident.window.end)},
        "saved": to_iso(span.start) + "/" + to_iso(span.end),
        "created": to_iso(created),
        "origin": origin,
        "missing": missing,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out


async def write_days(sources: Sources, span: Window, out: Path, *, symptom: str) -> list[Path]:
    """What `sources` hold over `span`, written as out/rca_data/<day>/ for each UTC day it
    touches (the symptom's own series as its KPI file); returns the day folders."""
    series = await sources.metrics.series(MetricQuery(span)) if sources.metrics is not None else None
    logs = [_log_row(r) for r in await sources.logs.records(LogQuery(span))] if sources.logs is not None else None
    spans = [_span_row(s) for s in await sources.traces.spans(SpanQuery(span))] if sources.traces is not None else None
    folders = []
    start = span.start
    while start < span.end:
        day = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d")
        midnight = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() + 86400
        part = Window(start, min(span.end, midnight))
        folder = out / "rca_data" / day
        folder.mkdir(parents=True, exist_ok=True)
        if series is not None:
            _write_metrics(folder / "metric", [s.between(part) for s in series], symptom=symptom)
        if logs is not None:
            _write_minutes(folder / "log", "log", [r for r in logs if part.contains(r["_time"])])
        if spans is not None:
            _write_minutes(folder / "trace", "trace", [r for r in spans if part.contains(r["_time"])])
        folders.append(folder)
        start = part.end
    return folders


def _pod(entity: str, instance: str) -> str:
    """The pod name to write: the instance when it maps back to the entity, else the entity."""
    return instance if instance and service_of_pod(instance) == entity else entity


def _write_metrics(path: Path, series: list[Series], *, symptom: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    by_pod: dict[tuple[str, bool], dict[str, pd.Series]] = defaultdict(dict)
    for s in series:
        kpi = s.entity == symptom and (not s.instance or s.instance == s.entity)
        key = (s.entity if kpi else _pod(s.entity, s.instance), kpi)
        by_pod[key][s.metric] = pd.Series(s.values, index=s.timestamps.astype(int))
    for (name, kpi), columns in by_pod.items():
        frame = pd.DataFrame(columns).sort_index()
        frame = frame[~frame.index.duplicated(keep="last")]
        frame.insert(0, "ServiceName" if kpi else "PodName", name)
        frame.insert(0, "TimeStamp", frame.index)
        suffix = "kpi" if kpi else "metric"
        frame.to_csv(path / f"{_SAFE.sub('_', name)}_{suffix}.csv", index=False)


def _write_minutes(path: Path, kind: str, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    by_minute: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:  # the rows are left as they were: another day's filter reads their time
        by_minute[datetime.fromtimestamp(row["_time"], UTC).strftime("%H_%M")].append(
            {k: v for k, v in row.items() if k != "_time"}
        )
    for minute, part in sorted(by_minute.items()):
        pd.DataFrame(part).to_csv(path / f"{minute}_{kind}.csv", index=False)


def _log_row(r: LogRecord) -> dict[str, Any]:
    clock = datetime.fromtimestamp(r.time, UTC).strftime("%H:%M:%S.%f")[:-3]
    level = _LEVEL_NAMES.get(int(r.severity), "INFO")
    return {
        "_time": r.time,
        "TimeUnixNano": int(round(r.time * 1e9)),
        "PodName": _pod(r.entity, r.instance),
        "TraceID": r.trace_id,
        "Log": f"{clock} {level} {r.location or '-'} {r.message}",
    }


def _span_row(s: Span) -> dict[str, Any]:
    return {
        "_time": s.start,
        "TraceID": s.trace_id,
        "SpanID": s.span_id,
        "ParentID": s.parent_id or "root",
        "PodName": _pod(s.entity, s.instance),
        "OperationName": s.operation,
        "StartTimeUnixNano": int(round(s.start * 1e9)),
        "EndTimeUnixNano": int(round(s.end * 1e9)),
        "Status": "error" if s.status is SpanStatus.ERROR else "",
    }
