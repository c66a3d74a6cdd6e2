"""The PetShop layout: one folder per traffic scenario, each with a call graph and issues.

    <root>/<scenario>/graph.csv                    adjacency matrix, row calls column
    <root>/<scenario>/noissue/metrics.csv          normal operation (optional)
    <root>/<scenario>/<split>/issue_N/metrics.csv  4 header rows: component, metric, statistic, time
    <root>/<scenario>/<split>/issue_N/target.json  symptom, root cause, injection command

Only the layout is assumed: no component or scenario name.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from rca.errors import InputError, MalformedFile
from rca.model import BrokenCase, CaseId, Incident, IncidentCase, Label, Modality, Normal, Sources, fault_type_from_text
from rca.sources.files import read_csv
from rca.sources.memory import InMemoryMetrics, StaticTopology
from rca.telemetry import Series, Window
from rca.timestamps import parse_timestamp

_HEADER_ROWS = 4


def _find(folder: Path, stem: str) -> Path | None:
    for suffix in (".csv", ".csv.gz"):
        path = folder / f"{stem}{suffix}"
        if path.is_file():
            return path
    return None


def is_petshop_scenario(path: Path) -> bool:
    return _find(path, "graph") is not None and any(_issue_dirs(path))


def _issue_dirs(scenario: Path) -> list[Path]:
    """Issue folders: any folder below the scenario holding metrics and target.json."""
    found = []
    for target in sorted(scenario.rglob("target.json")):
        folder = target.parent
        if _find(folder, "metrics") is not None and folder.parent != scenario.parent:
            found.append(folder)
    return found


def read_graph(path: Path) -> nx.DiGraph:
    """The call graph from an adjacency matrix whose non-zero cell (A, B) means A calls B."""
    frame = read_csv(path, header=0)
    frame = frame.set_index(frame.columns[0])
    if list(frame.index.astype(str)) != [str(c) for c in frame.columns]:
        raise MalformedFile(path, "row names and column names differ: not an adjacency matrix")
    matrix = frame.apply(pd.to_numeric, errors="coerce").fillna(0.0).to_numpy()
    graph = nx.DiGraph()
    names = [str(c) for c in frame.columns]
    graph.add_nodes_from(names)
    for i, j in zip(*np.nonzero(matrix), strict=True):
        if i != j:
            graph.add_edge(names[i], names[j], weight=float(matrix[i, j]))
    return graph


def read_metrics(path: Path) -> list[Series]:
    """One Series per (component, metric, statistic) column; metric named `metric.statistic`."""
    frame = read_csv(path, header=list(range(_HEADER_ROWS)))
    if frame.shape[1] < 2:
        raise MalformedFile(path, "no metric columns")
    try:
        times = np.array([parse_timestamp(str(v)) for v in frame.iloc[:, 0]], dtype=float)
    except InputError as exc:
        raise MalformedFile(path, f"bad timestamp in the first column: {exc}") from exc
    order = np.argsort(times, kind="stable")
    times = times[order]
    out = []
    for col in frame.columns[1:]:
        component, metric, statistic = (str(x) for x in col[:3])
        values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)[order]
        out.append(Series(component, f"{metric}.{statistic}", times, values))
    return out


def _read_target(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        _ = data["target"]["node"], data["root_cause"]["node"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise MalformedFile(path, f"expected target.node and root_cause.node ({exc})") from exc
    return data


def _span(series: list[Series], path: Path) -> Window:
    stamps = np.concatenate([s.timestamps for s in series]) if series else np.array([])
    if stamps.size == 0:
        raise MalformedFile(path, "no rows")
    step = float(np.median(np.diff(np.unique(stamps)))) if np.unique(stamps).size > 1 else 300.0
    return Window(float(stamps.min()), float(stamps.max()) + step)


def load_petshop(
    root: Path, *, dataset: str | None = None, broken: list[BrokenCase] | None = None
) -> list[IncidentCase]:
    """Every labelled issue of every scenario folder at or directly below root (an issue whose
    files cannot be read goes to `broken` where given, else raises MalformedFile)."""
    scenarios = (
        [root]
        if is_petshop_scenario(root)
        else sorted(p for p in root.iterdir() if p.is_dir() and is_petshop_scenario(p))
    )
    name = dataset or (root.parent.name if scenarios == [root] else root.name)
    return [case for s in scenarios for case in _scenario_cases(name, s, broken)]


def _scenario_cases(name: str, scenario: Path, broken: list[BrokenCase] | None) -> list[IncidentCase]:
    graph_path = _find(scenario, "graph")
    assert graph_path is not None
    topology = StaticTopology(read_graph(graph_path))
    normal_path = _find(scenario / "noissue", "metrics")
    normal_series = read_metrics(normal_path) if normal_path else None
    out = []
    for issue in _issue_dirs(scenario):
        try:
            out.append(_issue_case(name, scenario, issue, topology, normal_series, normal_path))
        except MalformedFile as exc:
            if broken is None:
                raise
            place = issue.relative_to(scenario.parent).as_posix()
            broken.append(BrokenCase(CaseId(f"{name}/{place}"), name, str(exc)))
    return out


def _issue_case(
    name: str,
    scenario: Path,
    issue: Path,
    topology: StaticTopology,
    normal_series: list[Series] | None,
    normal_path: Path | None,
) -> IncidentCase:
    """One labelled issue."""
    metrics_path = _find(issue, "metrics")
    assert metrics_path is not None
    target = _read_target(issue / "target.json")
    series = read_metrics(metrics_path)
    window = _span(series, metrics_path)
    alert = target["target"].get("timestamp")
    alert_time = parse_timestamp(alert) if alert is not None else None
    sources = Sources(metrics=InMemoryMetrics(series), topology=topology)
    if normal_series is not None and normal_path is not None:
        normal = Normal(_span(normal_series, normal_path), Sources(metrics=InMemoryMetrics(normal_series)))
    elif alert_time is not None and alert_time > window.start:
        normal = Normal(Window(window.start, alert_time), sources)
    else:
        normal = None
    place = issue.relative_to(scenario.parent).as_posix()
    notes = ["logs: absent", "traces: absent"]
    if normal_series is None:
        notes.append("normal metrics: noissue/ absent, using the series before the symptom")
    incident = Incident(
        id=CaseId(f"{name}/{place}"),
        dataset=name,
        symptom=str(target["target"]["node"]),
        window=window,
        sources=sources,
        normal={Modality.METRICS: normal} if normal else {},
        alert_time=alert_time,
        notes=tuple(notes),
    )
    command = str(target.get("metadata", {}).get("reproducibility", {}).get("command", ""))
    label = Label(str(target["root_cause"]["node"]), fault_type_from_text(command), command, alert_time)
    return IncidentCase(incident, label)
