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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rca.errors import InputError, MalformedFile
from rca.model import BrokenCase, CaseId, Incident, IncidentCase, Label, Modality, Normal, Sources, fault_type_from_text
from rca.sources.files import service_of_pod
from rca.sources.nezha_folder import (
    DAY,
    Folder,
    FolderLogs,
    FolderMetrics,
    FolderTopology,
    FolderTraces,
)
from rca.telemetry import Window
from rca.timestamps import parse_timestamp

NORMAL_LOOKBACK_SECONDS = 3600.0


def is_nezha_root(path: Path) -> bool:
    return (path / "rca_data").is_dir()


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
                faults.append(
                    _Fault(parse_timestamp(str(e["inject_time"])), str(e["inject_pod"]), str(e["inject_type"]))
                )
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
        folder = Folder(day_path)
        normal_path = root / "construct_data" / day_path.name
        normal = Folder(normal_path) if normal_path.is_dir() else None
        cases.extend(_day_cases(name, folder, normal, faults))
    return cases


def _day_cases(name: str, folder: Folder, normal: Folder | None, faults: list[_Fault]) -> list[IncidentCase]:
    kpi = folder.kpi_entities() if folder.has("metric") else ()
    out = []
    for fault in faults:
        clock = datetime.fromtimestamp(fault.time, tz=UTC).strftime("%H:%M:%S")
        case_id = CaseId(f"{name}/{folder.day}/{clock}")
        incident = day_incident(name, folder, normal, case_id, case_window(case_id, fault.time), kpi=kpi)
        label = Label(service_of_pod(fault.pod), fault_type_from_text(fault.kind), fault.kind, fault.time)
        out.append(IncidentCase(incident, label))
    return out


def day_incident(
    name: str,
    folder: Folder,
    normal: Folder | None,
    case_id: CaseId,
    window: Window,
    *,
    kpi: tuple[str, ...] = (),
    symptom: str = "",
) -> Incident:
    """The incident of one window of a day folder (unlabelled: the label is the caller's)."""
    has_metrics, has_logs, has_traces = folder.has("metric"), folder.has("log"), folder.has("trace")
    topo_parts: list[tuple[Folder, Window | None]] = []
    if normal is not None and normal.has("trace"):
        topo_parts.append((normal, None))
    if has_traces:
        topo_parts.append((folder, window))
    sources = Sources(
        metrics=FolderMetrics(folder) if has_metrics else None,
        logs=FolderLogs(folder) if has_logs else None,
        traces=FolderTraces(folder) if has_traces else None,
        topology=FolderTopology(tuple(topo_parts), kpi) if topo_parts else None,
    )
    # Normal behaviour: the hour before the window, and for logs and traces also the
    # layout's fault-free stretch (construct_data), read whole.
    lookback = Window(window.start - NORMAL_LOOKBACK_SECONDS, window.start)
    normals: dict[Modality, Normal] = {}
    if has_metrics:
        free_metrics = normal if normal is not None and normal.has("metric") else None
        normals[Modality.METRICS] = Normal(
            lookback, sources, Sources(metrics=FolderMetrics(free_metrics, whole=True)) if free_metrics else None
        )
    free_logs = normal if normal is not None and normal.has("log") else None
    free_traces = normal if normal is not None and normal.has("trace") else None
    if has_logs or free_logs:
        normals[Modality.LOGS] = Normal(
            lookback, Sources(logs=sources.logs), Sources(logs=FolderLogs(free_logs, whole=True)) if free_logs else None
        )
    if has_traces or free_traces:
        normals[Modality.TRACES] = Normal(
            lookback,
            Sources(traces=sources.traces),
            Sources(traces=FolderTraces(free_traces, whole=True)) if free_traces else None,
        )
    symptom = symptom or (kpi[0] if kpi else _entry_service(folder, normal, window))
    return Incident(
        id=case_id,
        dataset=name,
        symptom=symptom,
        window=window,
        sources=sources,
        normal=normals,
        notes=tuple(_notes(sources, folder, normal)),
        changes=folder.changes(),
    )


def recording(root: Path, *, case_id: str, symptom: str, window: Window) -> Incident:
    """An unlabelled window of a Nezha-layout folder (a snapshot rcabot wrote)."""
    days = sorted(p for p in (root / "rca_data").iterdir() if p.is_dir() and DAY.match(p.name))
    if len(days) != 1:
        raise MalformedFile(root / "rca_data", f"a recording holds one day folder, found {len(days)}")
    return day_incident(root.name, Folder(days[0]), None, CaseId(case_id), window, symptom=symptom)


def _entry_service(folder: Folder, normal: Folder | None, window: Window) -> str:
    """The service that receives requests from outside: the most frequent root-span entity."""
    for f, w in ((normal, None), (folder, window)):
        if f is not None and f.has("trace"):
            _, roots = f.calls(w)
            if roots:
                return roots.most_common(1)[0][0]
    return ""


def _notes(sources: Sources, folder: Folder, normal: Folder | None) -> list[str]:
    notes = [f"{m}: absent" for m, ok in sources.modalities().items() if not ok]
    if normal is None:
        notes.append("normal logs/traces: absent (no construct_data for this day)")
    if sources.metrics is not None:
        notes.extend(folder.skipped())
    return notes
