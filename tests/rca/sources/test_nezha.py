import asyncio
import gzip
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from rca.errors import MalformedFile
from rca.model import FaultType, Modality
from rca.signals import Signal, signal_of
from rca.sources import nezha_folder
from rca.sources.datasets import find_cases
from rca.sources.files import service_of_pod
from rca.sources.nezha import load_nezha
from rca.sources.nezha_files import parse_log_line, read_logs, read_metrics, read_spans
from rca.sources.nezha_folder import Folder, Kept
from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery
from rca.telemetry import Severity, Window
from rca.timestamps import parse_timestamp
from rca.topology import is_kpi

DAY = "2023-01-29"
INJECT = parse_timestamp("2023-01-29T13:31:54Z")


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "any-name"
    shutil.copytree(src, dst)
    return dst


def test_slice_yields_one_labelled_case(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    assert case.id == "nezha-trainticket/2023-01-29/13:31:54"
    assert case.label.service == "ts-contacts-service"
    assert case.label.fault_type is FaultType.CPU
    inc = case.incident
    assert inc.window.start < INJECT < inc.window.end
    assert inc.sources.modalities() == {"metrics": True, "logs": True, "traces": True}
    assert inc.symptom == "Frontend"  # the entry KPI file's own service name
    assert inc.normal_for(Modality.LOGS) is not None


def test_dataset_name_is_the_folder_name(nezha_slice: Path, tmp_path: Path) -> None:
    root = _copy(nezha_slice, tmp_path)
    (case,) = find_cases(tmp_path)
    assert case.id.startswith("any-name/") and case.incident.dataset == "any-name"
    assert root.exists()


def _metric_lines(nezha_slice: Path) -> list[str]:
    """The lines of one real pod metric file of the slice (header first)."""
    src = next((nezha_slice / "rca_data" / DAY / "metric").glob("ts-contacts-service*"))
    with gzip.open(src, "rt") as fh:
        return fh.read().splitlines()


def test_metric_timestamps_with_go_suffix_and_nan(nezha_slice: Path, tmp_path: Path) -> None:
    lines = _metric_lines(nezha_slice)
    header = lines[0].split(",")
    # drop the epoch column so the Go-style `Time` strings must be parsed, and blank a value
    drop = header.index("TimeStamp")
    rows = [",".join(c for i, c in enumerate(line.split(",")) if i != drop) for line in lines]
    name = rows[0].split(",")[3]
    cells = rows[2].split(",")
    cells[3] = ""
    rows[2] = ",".join(cells)
    plain = tmp_path / "pod-a-5dc8d4f9fd-46997_metric.csv"
    plain.write_text("\n".join(rows) + "\n")
    series, is_kpi = read_metrics(plain)
    assert not is_kpi
    cpu = next(s for s in series if s.metric == name)
    assert cpu.entity == "ts-contacts-service"
    assert math.isnan(cpu.values[1])
    assert cpu.timestamps[0] == pytest.approx(INJECT - 70 * 60, abs=70)
    assert all(cpu.timestamps[i] < cpu.timestamps[i + 1] for i in range(len(cpu) - 1))


def test_logs_unwrap_docker_json_and_parse_level(nezha_slice: Path) -> None:
    records = read_logs(nezha_slice / "rca_data" / DAY / "log" / "13_31_log.csv.gz")
    assert len(records) > 1000
    r = records[0]
    assert r.entity.startswith("ts-") and not r.entity.endswith(r.instance[-5:])
    assert r.trace_id and "#" in r.location and not r.message.startswith("{")
    assert {Severity.INFO, Severity.WARNING} <= {x.severity for x in records}
    assert all(INJECT - 120 < x.time < INJECT + 120 for x in records)


def test_log_line_forms() -> None:
    line = '{"log":"16:42:22.418 ERROR f.s.FoodServiceImpl#302 TraceID: abc SpanID: def [getAllFood][failed]\\n"}'
    sev, loc, tid, msg = parse_log_line(line)
    assert (sev, loc, tid, msg) == (
        Severity.ERROR,
        "f.s.FoodServiceImpl#302",
        "abc",
        "[getAllFood][failed]",
    )
    sev, loc, _, msg = parse_log_line("java.lang.NullPointerException: boom")
    assert sev is Severity.ERROR and loc == "" and "boom" in msg
    assert parse_log_line("{not json")[0] is Severity.UNKNOWN


def test_spans_and_topology(nezha_slice: Path) -> None:
    spans = read_spans(nezha_slice / "rca_data" / DAY / "trace" / "13_31_trace.csv.gz")
    roots = [s for s in spans if not s.parent_id]
    assert roots and all(s.end >= s.start for s in spans)
    (case,) = load_nezha(nezha_slice)
    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    assert graph.number_of_nodes() > 20
    assert "ts-contacts-service" in graph
    assert any(graph.has_edge("Frontend", r.entity) for r in roots)
    assert is_kpi(graph, "Frontend") and not is_kpi(graph, "ts-contacts-service")  # the entry KPI, not a workload


def test_repeated_names_of_a_file_are_held_once(nezha_slice: Path) -> None:
    """A pod, its service, a code location, a trace id and an operation repeat from row to
    row; each distinct text is one object, and a metric file's series of one pod share one
    clock, and a parent span's id is its span's: the same values at a pointer a row rather
    than a copy."""
    day = nezha_slice / "rca_data" / DAY
    records = read_logs(day / "log" / "13_31_log.csv.gz")
    for field in ("instance", "entity", "location", "trace_id"):
        values = [getattr(r, field) for r in records]
        assert len({id(v) for v in values}) == len(set(values)), field
    spans = read_spans(day / "trace" / "13_31_trace.csv.gz")
    for column in (spans.trace_id, spans.entity, spans.operation, spans.instance, spans.status):
        assert len({id(v) for v in column}) == len(set(column.tolist()))
    ids = {s: id(s) for s in spans.span_id}  # a parent's id is its span's own text
    children = [p for p in spans.parent_id if p in ids]
    assert children and all(id(p) == ids[p] for p in children)
    series, _ = read_metrics(next((day / "metric").glob("ts-*")))
    clocks = {id(s.timestamps) for s in series if s.instance == series[0].instance}
    assert len(series) > 1 and len(clocks) == 1 and not series[0].timestamps.flags.writeable


def test_sources_cut_to_the_window(nezha_slice: Path) -> None:
    (case,) = load_nezha(nezha_slice)
    inc = case.incident
    logs = asyncio.run(inc.sources.logs.records(LogQuery(inc.window, ("ts-contacts-service",))))  # type: ignore[union-attr]
    assert logs and all(r.entity == "ts-contacts-service" and inc.window.contains(r.time) for r in logs)
    spans = asyncio.run(inc.sources.traces.spans(SpanQuery(inc.window)))  # type: ignore[union-attr]
    assert spans and all(inc.window.contains(s.start) for s in spans)
    series = asyncio.run(inc.sources.metrics.series(MetricQuery(inc.window, ("ts-contacts-service",))))  # type: ignore[union-attr]
    assert series and all(inc.window.contains(float(t)) for s in series for t in s.timestamps)


def test_missing_logs_are_reported_not_fatal(nezha_slice: Path, tmp_path: Path) -> None:
    root = _copy(nezha_slice, tmp_path)
    shutil.rmtree(root / "rca_data" / DAY / "log")
    shutil.rmtree(root / "construct_data")
    (case,) = load_nezha(root)
    assert case.incident.sources.logs is None
    assert "logs: absent" in case.incident.notes
    assert any("construct_data" in n for n in case.incident.notes)


def test_a_metric_file_that_holds_no_series_is_skipped_and_said(nezha_slice: Path, tmp_path: Path) -> None:
    # OnlineBoutique's day folders, in the same layout, keep a call list beside the pods' series
    root = _copy(nezha_slice, tmp_path)
    (root / "rca_data" / DAY / "metric" / "dependency.csv").write_text("Source,Target,Weight\nfrontend,cartservice,1\n")
    (case,) = load_nezha(root)
    assert any("dependency.csv skipped" in n and "PodName" in n for n in case.incident.notes)
    series = asyncio.run(
        case.incident.sources.metrics.series(  # type: ignore[union-attr]
            MetricQuery(case.incident.window, ("ts-contacts-service",))
        )
    )
    assert series


def test_call_edge_latency_files_are_read_as_each_sides_latency_of_that_edge(nezha_slice: Path, tmp_path: Path) -> None:
    # OnlineBoutique's per-edge median latency, as the caller timed it and as the callee did
    root = _copy(nezha_slice, tmp_path)
    (case,) = load_nezha(root)
    start = case.incident.window.start
    rows = [f"2022-08-23 12:00:{i:02d} +0000 UTC,{start + 60 * i:.0f},{0.003 + i / 1000}" for i in range(5)]
    metric = root / "rca_data" / DAY / "metric"
    (metric / "source_50.csv").write_text(
        "time,timestamp,frontend_ts-contacts-service,front_end_cart,ts-a_ts-b\n"
        + "\n".join(f"{r},0.5,{i}" for i, r in enumerate(rows))
        + "\n"
    )
    (metric / "destination_50.csv").write_text("time,timestamp,frontend_ts-contacts-service\n" + "\n".join(rows) + "\n")
    (case,) = load_nezha(root)
    series = asyncio.run(case.incident.sources.metrics.series(MetricQuery(case.incident.window)))  # type: ignore[union-attr]
    edges = {(s.entity, s.metric, s.instance): s for s in series if "->" in s.instance}
    client = edges[("ts-contacts-service", "ClientLatencyP50(s)", "frontend->ts-contacts-service")]
    server = edges[("ts-contacts-service", "ServerLatencyP50(s)", "frontend->ts-contacts-service")]
    np.testing.assert_allclose(client.values, [0.003 + i / 1000 for i in range(5)])
    np.testing.assert_allclose(server.timestamps, [start + 60 * i for i in range(5)])
    assert ("ts-b", "ClientLatencyP50(s)", "ts-a->ts-b") in edges  # both sides measure the callee
    assert signal_of(client.metric) is Signal.LATENCY
    # a column that names no single caller_callee pair is left out, and said
    assert not any(s.entity == "front" for s in series)
    assert any("source_50.csv" in n and "front_end_cart" in n for n in case.incident.notes)


def test_with_no_spans_kept_for_the_window_the_calls_come_from_the_nearest_minute(
    nezha_slice: Path, tmp_path: Path
) -> None:
    root = _copy(nezha_slice, tmp_path)
    (case,) = load_nezha(root)
    full = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    shutil.rmtree(root / "construct_data" / DAY / "trace")
    for f in (root / "rca_data" / DAY / "trace").glob("13_*"):
        f.rename(f.with_name(f.name.replace("13_", "11_", 1)))  # kept for other minutes only
    (case,) = load_nezha(root)
    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    assert graph.number_of_edges() > 0 and set(graph.edges) <= set(full.edges)


def test_plain_csv_reads_like_gzip(nezha_slice: Path, tmp_path: Path) -> None:
    root = _copy(nezha_slice, tmp_path)
    log_dir = root / "rca_data" / DAY / "log"
    gz = log_dir / "13_32_log.csv.gz"
    (log_dir / "13_32_log.csv").write_bytes(gzip.decompress(gz.read_bytes()))
    gz.unlink()
    assert len(read_logs(log_dir / "13_32_log.csv")) > 1000


def test_malformed_file_error_names_the_file(nezha_slice: Path, tmp_path: Path) -> None:
    root = _copy(nezha_slice, tmp_path)
    bad = root / "rca_data" / DAY / "trace" / "13_31_trace.csv.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(MalformedFile) as info:
        read_spans(bad)
    assert "13_31_trace.csv.gz" in str(info.value)
    broken_list = root / "rca_data" / DAY / f"{DAY}-fault_list.json"
    broken_list.write_text("{")
    with pytest.raises(MalformedFile, match="fault_list"):
        load_nezha(root)


@pytest.mark.parametrize(
    ("pod", "service"),
    [
        ("ts-basic-service-5dc8d4f9fd-46997", "ts-basic-service"),
        ("frontend-7f8d7d756d-k7b9j", "frontend"),
        ("redis-cart-0", "redis-cart"),
        ("checkoutservice", "checkoutservice"),
    ],
)
def test_service_of_pod(pod: str, service: str) -> None:
    assert service_of_pod(pod) == service


def test_full_trainticket_has_45_faults(shared_datasets: Path) -> None:
    cases = load_nezha(shared_datasets / "nezha-trainticket")
    assert len(cases) == 45
    kinds = {c.label.fault_type for c in cases}
    assert kinds == {
        FaultType.CPU,
        FaultType.EXCEPTION,
        FaultType.WRONG_RESULT,
        FaultType.NETWORK_DELAY,
    }
    for c in cases:  # the window never starts or ends at the same offset from the injection
        assert c.incident.window.seconds > 400


def test_overlapping_minute_files_give_each_record_once(nezha_slice: Path, tmp_path: Path) -> None:
    (case,) = load_nezha(nezha_slice)
    inc = case.incident
    before_logs = asyncio.run(inc.sources.logs.records(LogQuery(inc.window)))  # type: ignore[union-attr]
    before_spans = asyncio.run(inc.sources.traces.spans(SpanQuery(inc.window)))  # type: ignore[union-attr]
    root = _copy(nezha_slice, tmp_path)
    day = root / "rca_data" / DAY
    # the publisher's files overlap: one may hold the whole of the next minute's
    shutil.copy(day / "log" / "13_32_log.csv.gz", day / "log" / "13_34_log.csv.gz")
    shutil.copy(day / "trace" / "13_32_trace.csv.gz", day / "trace" / "13_34_trace.csv.gz")
    (again,) = load_nezha(root)
    inc2 = again.incident
    logs = asyncio.run(inc2.sources.logs.records(LogQuery(inc2.window)))  # type: ignore[union-attr]
    spans = asyncio.run(inc2.sources.traces.spans(SpanQuery(inc2.window)))  # type: ignore[union-attr]
    assert len(logs) == len(before_logs) > 1000
    assert len(spans) == len(before_spans) > 1000


def test_the_fault_free_stretch_is_kept_apart_from_the_look_back(nezha_slice: Path) -> None:
    (case,) = load_nezha(nezha_slice)
    normal = case.incident.normal_for(Modality.LOGS)
    assert normal is not None and normal.fault_free is not None and normal.fault_free.logs is not None
    free = asyncio.run(normal.fault_free.logs.records(LogQuery(normal.window)))
    # construct_data's stretch lies hours before the look-back and is read whole
    assert free and all(r.time < normal.window.start for r in free)
    traces = case.incident.normal_for(Modality.TRACES)
    assert traces is not None and traces.fault_free is not None and traces.fault_free.traces is not None


def test_a_misrecorded_sample_time_is_set_right_or_left_out_and_said(nezha_slice: Path, tmp_path: Path) -> None:
    """A TimeStamp years from the rest of its file (a digit flipped) is not placed in another year."""
    lines = _metric_lines(nezha_slice)
    header = lines[0].split(",")
    at = header.index("TimeStamp")
    rows = [line.split(",") for line in lines]
    good = float(rows[2][at])
    rows[2][at] = str(int(good) + 200_000_000)  # 1674... -> 1874...: six years on
    rows[3][at] = str(int(float(rows[3][at])) + 200_000_000)
    rows[3][header.index("Time")] = "not a time"
    bad = tmp_path / "pod-a-5dc8d4f9fd-46997_metric.csv"
    bad.write_text("\n".join(",".join(r) for r in rows) + "\n")
    notes: list[str] = []
    series, _ = read_metrics(bad, notes)
    cpu = series[0]
    assert cpu.timestamps.max() - cpu.timestamps.min() < 86_400
    assert any(abs(t - good) < 2 for t in cpu.timestamps)  # set right from its Time column
    assert len(cpu) == len(lines) - 2  # the row with no readable Time left out
    assert notes and "1 set right" in notes[0] and "1 left out" in notes[0] and bad.name in notes[0]


def test_a_window_without_minute_files_gives_each_kind_its_own_empty_answer(nezha_slice: Path) -> None:
    """Logs and spans of a window no minute file touches are both empty, each of its own kind:
    the one read first must not answer for the other (a late window on a day with gaps)."""
    from rca.replay import with_window
    from rca.telemetry import Window

    (case,) = find_cases(nezha_slice)
    far = Window(INJECT + 6 * 3600, INJECT + 6 * 3600 + 300)
    logs, traces = case.incident.sources.logs, case.incident.sources.traces
    assert logs is not None and traces is not None
    assert asyncio.run(logs.records(LogQuery(far))) == []
    spans = asyncio.run(traces.spans(SpanQuery(far)))
    assert len(spans) == 0
    topology = with_window(case.incident, far).sources.topology  # the call graph of those minutes' spans
    assert topology is not None
    asyncio.run(topology.topology())


def test_a_day_folder_keeps_a_few_windows_and_reads_the_same_after_forgetting(
    nezha_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded caches: reading more windows than it keeps, a folder holds at most KEPT_WINDOWS
    of each kind and only the minute files they hold, and a window read again after it was
    forgotten gives what a fresh folder gives."""
    monkeypatch.setattr(nezha_folder, "KEPT_WINDOWS", 2)  # the slice's three minute files make few windows
    day = nezha_slice / "rca_data" / "2023-01-29"
    start = parse_timestamp("2023-01-29T13:31:00Z")
    # windows whose minute files (each reaches MINUTE_FILE_REACH past its end) differ: six keys
    windows = [
        Window(start + a, start + b)
        for a, b in [(-300, -250), (-200, -150), (-150, -110), (5, 20), (65, 80), (125, 140)]
    ]
    folder = Folder(day, kept=Kept())
    for w in windows:
        folder.logs(w)
        folder.span_index(w)
    held = folder.holding()
    assert held["records log"] <= 2 and held["index trace"] <= 2
    assert held["records log"] + held["records trace"] < 2 * len(windows)  # some were forgotten
    for w in windows:
        assert folder.logs(w) == Folder(day, kept=Kept()).logs(w)
        assert folder.spans(w).span_id.tolist() == Folder(day, kept=Kept()).spans(w).span_id.tolist()


def test_folders_keep_their_windows_together_so_a_day_left_behind_is_let_go(
    nezha_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An evaluation moves from day to day: what the folders made is kept together, so the
    windows read last are held, not the last few of every day ever read."""
    monkeypatch.setattr(nezha_folder, "KEPT_WINDOWS", 1)
    kept = Kept()
    first = Folder(nezha_slice / "construct_data" / "2023-01-29", kept=kept)
    then = Folder(nezha_slice / "rca_data" / "2023-01-29", kept=kept)
    first.logs(None)
    assert first.holding()["records log"] == 1 and first.holding()["minute files"] > 0
    then.logs(None)
    assert then.holding()["records log"] == 1
    assert first.holding() == {"minute files": 0}  # the day left behind holds nothing
    assert first.logs(None) == Folder(first.path, kept=Kept()).logs(None)  # and reads the same again
