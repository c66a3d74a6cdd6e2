import asyncio
from dataclasses import replace
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.evidence.logs import (
    dependency_errors,
    mine,
    new_miner,
    normal_logs,
    template_shifts,
)
from rca.evidence.metrics import MAX_Z, metric_shifts, robust_z, shift_of
from rca.evidence.paths import cut_paths
from rca.evidence.toolbox import Toolbox
from rca.evidence.traces import GapShare, repeated_calls, timings, wrong_answers
from rca.hypotheses import score_hypotheses
from rca.model import CaseId, FaultType, Incident, Modality, Normal, Sources
from rca.rules.config import ScoringConfig
from rca.signals import Signal
from rca.sources.datasets import find_cases
from rca.sources.memory import InMemoryTraces
from rca.sources.protocols import LogQuery
from rca.telemetry import LogRecord, Series, Severity, Span, SpanStatus, Window
from rca.timestamps import parse_timestamp

INJECT = parse_timestamp("2023-01-29T13:31:54Z")


@pytest.fixture(scope="module")
def toolbox() -> Toolbox:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    return Toolbox(case.incident)


def test_metric_evidence_finds_the_cpu_jump_and_its_onset(toolbox: Toolbox) -> None:
    result = asyncio.run(toolbox.metrics("ts-contacts-service"))
    cpu = [e for e in result.evidence if e.signal is Signal.CPU and "[host]" not in e.detail]
    assert cpu and cpu[0].score > 10 and cpu[0].direction == 1
    assert cpu[0].onset is not None and INJECT - 60 <= cpu[0].onset <= INJECT + 180
    assert cpu[0].query.startswith("metrics{entity=ts-contacts-service")


def test_log_evidence_mines_templates_with_drain3(toolbox: Toolbox) -> None:
    results = [asyncio.run(toolbox.logs(e)) for e in ("ts-order-service", "ts-contacts-service")]
    items = [e for r in results for e in r.evidence]
    assert items and all(e.modality is Modality.LOGS and e.subject.startswith("T") for e in items)
    assert any("<" in e.detail for e in items)  # masked parameters in the template
    assert asyncio.run(toolbox.logs("no-such-service")).status == "no_data"


def test_trace_evidence_reports_own_time_and_gaps(toolbox: Toolbox) -> None:
    found = [asyncio.run(toolbox.spans(e)) for e in ("ts-contacts-service", "ts-basic-service", "ts-order-service")]
    kinds = {e.kind for r in found for e in r.evidence}
    assert kinds <= {EvidenceKind.TRACE_SELF_TIME, EvidenceKind.TRACE_EDGE_LATENCY}
    assert all(r.status in ("ok", "no_data") for r in found)


def test_spans_with_nothing_recorded_before_the_window_time_nothing_and_the_investigation_says_so() -> None:
    """A latency needs a normal to be slow against. Where the look-back holds no span (a
    recording that began inside the window, a new service), no span is timed, and the
    investigation says so rather than passing over it."""
    from rca.model import Incident, Normal, Sources
    from rca.sources.memory import InMemoryTraces

    window = Window(1000.0, 2200.0)
    spans = []
    for i in range(240):  # a call every 3 s from 1400 (the recording's start): slow from 2000
        t = 1400.0 + 3.0 * i
        took = 0.5 if t >= 2000.0 else 0.01 * (1 + i % 3)
        spans += [
            Span(f"t{i}", f"f{i}", "", "front", "GET /", t, t + took + 0.002),
            Span(f"t{i}", f"a{i}", f"f{i}", "a", "GET /work", t + 0.001, t + 0.001 + took),
        ]
    traces = InMemoryTraces(spans)
    empty = Normal(Window(0.0, 1000.0), Sources(traces=traces))  # a look-back that holds nothing
    incident = Incident("c", "test", "front", window, Sources(traces=traces), {Modality.TRACES: empty})
    toolbox = Toolbox(incident)
    assert not asyncio.run(toolbox.spans("a")).evidence
    assert "normal traces: none recorded before the window, no latency baseline" in toolbox.missing
    # with calm minutes recorded before the window, the same slow calls are found
    moved = [replace(s, start=s.start - 700.0, end=s.end - 700.0) for s in spans if s.start < 1700.0]
    lookback = Normal(Window(0.0, window.start), Sources(traces=InMemoryTraces(moved)))
    found = Toolbox(replace(incident, normal={Modality.TRACES: lookback}))
    own = [e for e in asyncio.run(found.spans("a")).evidence if e.kind is EvidenceKind.TRACE_SELF_TIME]
    assert own and own[0].direction == 1
    assert not any(m.startswith("normal traces") for m in found.missing)


def test_an_audit_after_an_investigation_reuses_its_span_timings_and_another_window_does_not() -> None:
    """Two toolboxes on one incident (the investigation's, then the audit's) find the same trace
    evidence from one computation of the span timings; another window is computed afresh."""
    from rca.replay import with_window
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    first, second = Toolbox(case.incident), Toolbox(case.incident)
    a = asyncio.run(first.spans("ts-order-service"))
    b = asyncio.run(second.spans("ts-order-service"))
    assert [(e.subject, e.score) for e in a.evidence] == [(e.subject, e.score) for e in b.evidence]
    assert first._own is second._own  # one computation
    w = case.incident.window
    other = Toolbox(with_window(case.incident, Window(w.start - 120, w.end - 120)))
    asyncio.run(other.spans("ts-order-service"))
    assert other._own is not first._own and other._own is not None


def test_robust_z_floors_a_flat_baseline() -> None:
    z = robust_z(np.full(50, 100.0), np.array([100.0, 95.0]))
    assert z[0] == 0 and z[1] == pytest.approx(-50.0)  # 0.1 % of the median


def test_memory_drifting_by_a_percent_is_no_shift_but_a_fifth_is() -> None:
    t = np.arange(20, dtype=float) * 60
    normal = Series("svc", "MemoryUsageRate(%)", t, np.full(20, 20.0))
    drift = shift_of(normal, Series("svc", "MemoryUsageRate(%)", t + 1200, np.full(20, 20.2)))
    leak = shift_of(normal, Series("svc", "MemoryUsageRate(%)", t + 1200, np.full(20, 24.0)))
    cpu = shift_of(
        Series("svc", "CpuUsageRate(%)", t, np.full(20, 20.0)),
        Series("svc", "CpuUsageRate(%)", t + 1200, np.full(20, 20.2)),
    )
    assert drift is not None and leak is not None and cpu is not None
    assert drift.score < 3 < leak.score
    assert cpu.score > 3  # the wider floor is memory's alone


def test_a_level_already_reached_when_the_window_opens_is_under_way() -> None:
    t = np.arange(10, dtype=float) * 60
    normal = Series("a", "cpu", t - 3600, np.full(10, 10.0) + np.tile([0.0, 1.0], 5))
    drifted = shift_of(normal, Series("a", "cpu", t, np.full(10, 30.0)))
    assert drifted is not None and drifted.score > 10 and drifted.under_way and drifted.until is None
    rising = np.full(10, 10.0)
    rising[6:] = 30.0
    fresh = shift_of(normal, Series("a", "cpu", t, rising))
    assert fresh is not None and not fresh.under_way and fresh.onset == 360.0


def test_a_one_sample_spike_has_no_onset_and_two_samples_do() -> None:
    t = np.arange(8, dtype=float) * 300
    normal = Series("a", "latency.p50", t - 7200, np.full(8, 0.2) + np.tile([0.0, 0.01], 4))
    spike = shift_of(normal, Series("a", "latency.p50", t, np.array([0.2, 0.2, 0.2, 0.66, 0.2, 0.2, 0.2, 0.2])))
    assert spike is not None and spike.direction == 1 and spike.onset is None
    held = shift_of(normal, Series("a", "latency.p50", t, np.array([0.2, 0.2, 0.2, 0.66, 0.66, 0.2, 0.2, 0.2])))
    assert held is not None and held.onset == 900.0 and held.until == 1200.0


def test_the_anomaly_going_on_at_the_close_is_the_evidence_not_an_earlier_larger_one() -> None:
    """The user asks about now: a series with an earlier, larger run and one going on at the
    window's close is evidence of the one going on."""
    t = np.arange(20, dtype=float) * 60
    normal = Series("a", "CpuUsageRate(%)", t - 3600, np.full(20, 10.0) + np.tile([0.0, 1.0], 10))
    values = np.full(20, 10.0)
    values[3:6] = 95.0  # an earlier incident's
    values[17:] = 40.0  # this one's
    shift = shift_of(normal, Series("a", "CpuUsageRate(%)", t, values))
    assert shift is not None and shift.onset == 17 * 60.0 and shift.until is None and shift.peak == 40.0


def test_a_metric_shift_that_came_back_says_when() -> None:
    t = np.arange(12, dtype=float) * 60
    normal = Series("a", "CpuUsageRate(%)", t - 3600, np.full(12, 10.0) + np.tile([0.0, 1.0], 6))
    spike = np.full(12, 10.0)
    spike[3:6] = 95.0
    over = shift_of(normal, Series("a", "CpuUsageRate(%)", t, spike))
    assert over is not None and over.onset == 180.0 and over.until == 300.0
    spike[9:] = 95.0  # back up for the last points: it goes on
    assert shift_of(normal, Series("a", "CpuUsageRate(%)", t, spike)).until is None  # type: ignore[union-attr]


def test_without_a_normal_period_an_earlier_fault_in_the_window_neither_sets_the_level_nor_hides_this_one() -> None:
    """No look-back data: the window's first half, less what stands out in it, serves. An
    earlier fault holding part of it (as a day that begins with one does) must not become
    the normal."""
    t = np.arange(24, dtype=float) * 60
    values = np.full(24, 5.0) + np.tile([0.0, 0.4, 0.2], 8)  # a service's CPU with its usual wobble
    values[2:7] = 18.0  # an earlier fault, inside what the first third of the window would be
    values[21:] = 19.0  # this one, going on at the close
    shift = shift_of(None, Series("a", "CpuUsage(m)", t, values))
    assert shift is not None and shift.direction == 1 and shift.score > 10
    assert shift.onset == 21 * 60.0 and shift.until is None and 5.0 <= shift.normal_median <= 5.4
    # the same in other units and on another clock: the same finding
    moved = shift_of(None, Series("a", "CpuUsage(m)", t + 86400 * 3, values / 1000))
    assert moved is not None and moved.onset == 21 * 60.0 + 86400 * 3
    assert moved.score == pytest.approx(shift.score)


def test_own_time_and_network_gap_arithmetic() -> None:
    spans = [
        Span("t", "a1", "", "a", "GET /", 0.0, 1.0),
        Span("t", "a2", "a1", "a", "HTTP GET", 0.1, 0.9),  # a's client span: 0.8 s
        Span("t", "b1", "a2", "b", "/b", 0.2, 0.7),  # b's server span: 0.5 s inside it
        Span("t", "b2", "b1", "b", "db", 0.3, 0.4),
    ]
    own, gaps = timings(spans)
    by = {(str(x), round(float(v), 3)) for x, v in zip(own.subject, own.seconds, strict=True)}
    assert ("a", 0.2) in by  # root: 1.0 less its child 0.8
    assert ("b", 0.4) in by and ("b", 0.1) in by
    assert [(str(x), round(float(v), 3)) for x, v in zip(gaps.subject, gaps.seconds, strict=True)] == [("a->b", 0.3)]


def test_overlapping_children_cover_their_union_and_each_callee_gets_the_gap() -> None:
    spans = [
        Span("t", "p", "", "a", "work", 0.0, 10.0),
        Span("t", "k1", "p", "a", "step", 1.0, 4.0),
        Span("t", "k2", "p", "a", "step", 3.0, 6.0),  # overlaps k1: 1-6 is covered once
        Span("t", "k3", "p", "a", "step", 8.0, 12.0),  # runs past its parent: 8-10 counts
        Span("u", "q", "", "a", "call", 0.0, 10.0),
        Span("u", "r1", "q", "b", "/b", 2.0, 5.0),
        Span("u", "r2", "q", "c", "/c", 4.0, 7.0),
        Span("u", "r3", "q", "a", "local", 0.0, 10.0),  # a caller's local child is not the wire
        Span("v", "p", "", "a", "work", 0.0, 1.0),  # the same span id in another trace: its own span
    ]
    own, gaps = timings(spans)
    assert sorted(
        (str(s), float(t), round(float(v), 6)) for s, t, v in zip(own.subject, own.start, own.seconds, strict=True)
    ) == [
        ("a", 0.0, 1.0),
        ("a", 0.0, 3.0),
        ("a", 0.0, 10.0),  # v's root; t's root: 10 s less 1-6 and 8-10; u's local child
        ("a", 1.0, 3.0),
        ("a", 3.0, 3.0),
        ("a", 8.0, 4.0),
        ("b", 2.0, 3.0),
        ("c", 4.0, 3.0),
    ]  # leaves: all their own
    assert sorted((str(s), round(float(v), 6)) for s, v in zip(gaps.subject, gaps.seconds, strict=True)) == [
        ("a->b", 5.0),
        ("a->c", 5.0),
    ]  # 10 s less the 2-7 the two callees cover, on each call


def test_template_shift_is_scaled_by_volume() -> None:
    def recs(n: int, text: str, t0: float) -> list[LogRecord]:
        return [LogRecord(t0 + i, "svc", Severity.INFO, text) for i in range(n)]

    miner = new_miner()
    normal = mine(miner, recs(30, "served request 1", 0) + recs(30, "cache hit 2", 0))
    now = mine(
        miner, recs(60, "served request 7", 60) + recs(60, "cache hit 9", 60) + recs(20, "timeout calling db 3", 60)
    )
    shifts = {s.template: s for s in template_shifts(normal, now)}
    new = next(s for t, s in shifts.items() if "timeout" in t)
    assert new.is_new and new.score > 3
    assert all(abs(s.score) < 3 for t, s in shifts.items() if "timeout" not in t)  # doubled volume alone


def test_a_template_that_stopped_keeps_its_text() -> None:
    miner = new_miner()
    normal = mine(
        miner,
        [LogRecord(float(i), "svc", Severity.INFO, f"query start for route {i}") for i in range(40)]
        + [LogRecord(float(i), "svc", Severity.INFO, "served") for i in range(40)],
    )
    now = mine(miner, [LogRecord(60.0 + i, "svc", Severity.INFO, "served") for i in range(40)])
    stopped = next(s for s in template_shifts(normal, now) if s.now_per_min == 0)
    assert "query start for route" in stopped.template and stopped.score < -3
    assert stopped.severity is Severity.INFO and not stopped.is_new


def test_a_template_s_onset_is_where_it_departs_from_its_share() -> None:
    # a steady service: "served" and "queried" alike every second; at 300 s "queried" doubles,
    # and at 200 s "checked" (a tenth of the lines) stops
    def window() -> list[LogRecord]:
        out = []
        for t in range(600):
            out.append(LogRecord(1000.0 + t, "svc", Severity.INFO, "served"))
            out.extend(
                LogRecord(1000.0 + t + 0.5 * k, "svc", Severity.INFO, "queried") for k in range(2 if t >= 300 else 1)
            )
            if t % 10 == 0 and t < 200:
                out.append(LogRecord(1000.0 + t, "svc", Severity.INFO, "checked"))
        return out

    normal = [
        r
        for t in range(600)
        for r in (LogRecord(t, "svc", Severity.INFO, "served"), LogRecord(t, "svc", Severity.INFO, "queried"))
    ]
    normal += [LogRecord(float(t), "svc", Severity.INFO, "checked") for t in range(0, 600, 10)]
    miner = new_miner()
    shifts = {s.template: s for s in template_shifts(mine(miner, normal), mine(miner, window()))}
    assert abs(shifts["queried"].onset - 1300.0) <= 20  # not the window's first line at 1000
    assert shifts["checked"].score < -3 and abs(shifts["checked"].onset - 1200.0) <= 20


def test_a_code_path_cut_short_within_traces() -> None:
    # each request: the caller writes "calling", the service "start" then "done"; from 300 s
    # on, the service's code throws between them in every other request
    def requests(t0: float, n: int, cut_from: float | None) -> list[LogRecord]:
        out = []
        for i in range(n):
            t, tid = t0 + 2.0 * i, f"{t0:.0f}-{i}"
            cut = cut_from is not None and t >= cut_from and i % 2 == 0
            out += [
                LogRecord(t, "caller", Severity.INFO, "calling svc", tid),
                LogRecord(t + 0.1, "svc", Severity.INFO, f"start order {i}", tid),
            ]
            if not cut:
                out.append(LogRecord(t + 0.2, "svc", Severity.INFO, f"done order {i} in 5 ms", tid))
            out.append(LogRecord(t + 0.3, "caller", Severity.INFO, "svc answered", tid))
        return out

    miner = new_miner()
    normal = mine(miner, requests(0.0, 200, None))
    now = mine(miner, requests(1000.0, 300, 1300.0))
    (cut,) = [c for c in cut_paths(normal, now, Window(1000.0, 1600.0)) if c.score > 3]
    assert cut.entity == "svc" and "start" in cut.first and "done" in cut.then
    assert 1290.0 <= cut.onset <= 1320.0 and cut.cut >= 0.4 * (cut.traces - 150)
    # a window that opens or closes in the middle of requests cuts nothing
    assert all(
        c.score <= 3 for c in cut_paths(normal, mine(miner, requests(1000.0, 300, None)), Window(1000.4, 1599.5))
    )


def test_a_service_that_serves_requests_without_writing_its_lines_is_cut_short() -> None:
    # each request: a caller's line, svc's span, and svc logs one of two lines whose shapes
    # differ (no single template follows every span); from 1300 s on, svc throws before its
    # first line
    def requests(
        t0: float, n: int, silent_from: float | None, logs_until: float = 1e9
    ) -> tuple[list[LogRecord], list[Span]]:
        logs, spans = [], []
        for i in range(n):
            t, tid = t0 + 2.0 * i, f"{t0:.0f}-{i}"
            spans.append(Span(tid, f"{tid}-s", "", "svc", "GET /price", t, t + 0.05))
            if t < logs_until:
                logs.append(LogRecord(t, "caller", Severity.INFO, "asking svc", tid))
            if (silent_from is None or t < silent_from) and t < logs_until:
                line = f"query price of route {i}" if i % 2 else f"query prices of routes {i}, {i + 1} and {i + 2}"
                logs.append(LogRecord(t + 0.01, "svc", Severity.INFO, line, tid))
        return logs, spans

    miner = new_miner()
    normal_logs_, normal_spans = requests(0.0, 200, None)
    normal = mine(miner, normal_logs_)
    now_logs, now_spans = requests(1000.0, 300, 1300.0)
    found = cut_paths(
        normal, mine(miner, now_logs), Window(1000.0, 1600.0), normal_spans=normal_spans, now_spans=now_spans
    )
    (cut,) = [c for c in found if c.score > 3]
    assert cut.entity == "svc" and "GET /price" in cut.first and cut.then == "a line of its own"
    assert 1290.0 <= cut.onset <= 1320.0 and cut.cut >= 140
    # without the spans, the lines alone show no path: neither template follows the other
    assert all(c.score <= 3 for c in cut_paths(normal, mine(miner, now_logs), Window(1000.0, 1600.0)))
    # logs read only up to 1300 s while spans go on: the spans past the logs' end cut nothing
    early_logs, early_spans = requests(1000.0, 300, None, logs_until=1300.0)
    assert not [
        c
        for c in cut_paths(
            normal, mine(miner, early_logs), Window(1000.0, 1600.0), normal_spans=normal_spans, now_spans=early_spans
        )
        if c.score > 3
    ]
    # normal minutes whose lines were left out (an earlier fault's) teach no share of their spans
    _, more_spans = requests(500.0, 100, None)
    assert (
        cut_paths(
            normal,
            mine(miner, now_logs),
            Window(1000.0, 1600.0),
            normal_spans=normal_spans + more_spans,
            now_spans=now_spans,
        )[0].normal_share
        == 1.0
    )


def test_error_lines_that_name_another_service_are_failed_calls_to_it() -> None:
    services = ["ts-travel-service", "ts-basic-service", "user", "cart"]

    def line(entity: str, text: str, severity: Severity = Severity.ERROR) -> LogRecord:
        return LogRecord(0.0, entity, severity, text)

    now = mine(
        new_miner(),
        [
            *(
                line(
                    "ts-travel-service",
                    f"request {i} failed; nested exception is IllegalStateException: "
                    "No instances available for ts-basic-service",
                )
                for i in range(3)
            ),
            line("ts-basic-service", "query failed in ts-basic-service: no station"),  # its own name
            line("checkout", "user not found"),  # a plain word that happens to name a service
            line("checkout", "HTTPConnectionPool(host='cart', port=80): Max retries exceeded"),
            line("ts-travel-service", "served ts-basic-service answer", Severity.INFO),  # not an error
            line("orders", "upstream failure: user: malformed response"),  # a link of a wrapped error's chain
            line("orders", "cart total: 3 items"),  # a word before a colon, not a link of a chain
        ],
    )
    named = {entity: peers for (entity, _), peers in dependency_errors(now, services).items()}
    assert named == {
        "ts-travel-service": frozenset({"ts-basic-service"}),
        "checkout": frozenset({"cart"}),
        "orders": frozenset({"user"}),
    }


def test_a_template_s_run_ends_where_its_excess_ends() -> None:
    normal = [LogRecord(float(t), "svc", Severity.INFO, "served") for t in range(600)]
    now = [LogRecord(1000.0 + t, "svc", Severity.INFO, "served") for t in range(600)]
    now += [LogRecord(1100.0 + t, "svc", Severity.ERROR, "timeout calling db") for t in range(0, 100, 2)]
    miner = new_miner()
    (err,) = [s for s in template_shifts(mine(miner, normal), mine(miner, now)) if "timeout" in s.template]
    assert abs(err.onset - 1100.0) <= 10 and abs(err.until - 1200.0) <= 10


def test_one_text_written_at_two_code_locations_is_two_templates() -> None:
    recs = [
        LogRecord(float(i), "svc", Severity.INFO, f"calculate time {i}", location=f"Impl#{366 + 6 * (i % 2)}")
        for i in range(20)
    ]
    ids = {m.record.location: m.template_id for m in mine(new_miner(), recs)}
    assert len(set(ids.values())) == 2 and all(loc in tid for loc, tid in ids.items())


def test_a_look_back_minute_with_an_error_burst_is_not_normal() -> None:
    def recs(svc: str, minute: int, ok: int, errors: int) -> list[LogRecord]:
        return [LogRecord(minute * 60.0 + i, svc, Severity.INFO, f"served order {i}") for i in range(ok)] + [
            LogRecord(minute * 60.0 + 30 + i, svc, Severity.ERROR, f"no contacts for id {i}") for i in range(errors)
        ]

    miner = new_miner()
    free = mine(miner, recs("contacts", 0, 20, 0) + recs("orders", 0, 20, 2))
    back = mine(
        miner,
        recs("contacts", 10, 20, 0)
        + recs("contacts", 11, 5, 15)  # an earlier fault's tail
        + recs("orders", 11, 20, 3)  # its usual errors
        + recs("unseen", 11, 5, 15),
    )
    kept = {(m.record.entity, int(m.record.time // 60)) for m in normal_logs(back, free)}
    assert ("contacts", 10) in kept and ("contacts", 11) not in kept
    assert ("orders", 11) in kept and ("unseen", 11) in kept  # a service the stretch never saw keeps all
    assert normal_logs(back, []) == back  # without a fault-free stretch the look-back is all there is


def test_a_repeated_fault_is_measured_against_the_fault_free_stretch(shared_datasets: Path) -> None:
    """The same wrong result injected into one service three times: the second's look-back
    holds the first, and its error template must still count as a shift."""
    case = next(c for c in find_cases(shared_datasets / "nezha-trainticket") if c.id.endswith("2023-01-29/08:52:06"))
    result = asyncio.run(Toolbox(case.incident).logs(case.label.service))
    errors = [e for e in result.evidence if e.kind is EvidenceKind.LOG_ERROR_SHIFT]
    assert errors and max(e.score for e in errors) > 5


def test_an_exception_the_service_does_not_log_cuts_its_code_path(shared_datasets: Path) -> None:
    """An exception injected into travel2 at 10:26: it logs no error of its own, but the
    line after the failing call goes missing from the requests that reach it."""
    case = next(c for c in find_cases(shared_datasets / "nezha-trainticket") if c.id.endswith("2023-01-29/10:26:20"))
    result = asyncio.run(Toolbox(case.incident).logs(case.label.service))
    cuts = [e for e in result.evidence if e.kind is EvidenceKind.LOG_PATH_CUT]
    assert cuts and cuts[0].score > 5 and cuts[0].onset is not None and cuts[0].onset > case.incident.window.start


def _with_quiet(edges: list[tuple[str, str]]) -> nx.DiGraph:
    """A call graph with six more services behind the front that stay quiet, so that a
    signal in one or two services stands out from the background."""
    return nx.DiGraph(edges + [("front", f"quiet-{k}") for k in range(6)])


def _ev(i: int, entity: str, kind: EvidenceKind, signal: Signal, score: float, onset: float | None = 500.0) -> Evidence:
    return Evidence(
        EvidenceId(f"ev-{i}"),
        Modality.METRICS if kind is EvidenceKind.METRIC_SHIFT else Modality.TRACES,
        kind,
        entity,
        "m",
        score,
        signal,
        "q",
        "d",
        onset,
    )


def test_a_caller_explained_by_its_callee_is_a_victim() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")])
    window = Window(0.0, 1000.0)
    evidence = [
        _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0),
        _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 50.0),
        _ev(3, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 80.0),
    ]
    hyps = score_hypotheses(evidence, graph=graph, window=window, symptom="front")
    assert [h.service for h in hyps][:2] == ["b", "a"]
    assert "callee b" in hyps[1].rationale
    assert all(set(h.evidence) <= {"ev-1", "ev-2", "ev-3"} for h in hyps)


def test_a_callee_whose_anomaly_began_later_explains_nothing() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)
    evidence = [
        _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0, onset=300.0),
        _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 50.0, onset=700.0),
        _ev(3, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 80.0, onset=700.0),
    ]
    hyps = {h.service: h for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")}
    assert "callee" not in hyps["a"].rationale


def test_a_callee_whose_anomaly_was_over_explains_nothing() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)
    evidence = [
        _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0, onset=600.0),
        replace(_ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 80.0, onset=250.0), until=400.0),
    ]
    hyps = {h.service: h for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")}
    assert "callee" not in hyps["a"].rationale
    going_on = [evidence[0], replace(evidence[1], until=None)]
    hyps = {h.service: h for h in score_hypotheses(going_on, graph=graph, window=window, symptom="front")}
    assert "callee b" in hyps["a"].rationale


def test_a_callee_explains_a_slow_caller_only_through_calls_that_are_slow_while_it_is() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)
    slow_a = _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0, onset=600.0)
    busy_b = _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 80.0, onset=400.0)
    call = replace(_ev(3, "b", EvidenceKind.TRACE_EDGE_LATENCY, Signal.LATENCY, 40.0, onset=450.0), subject="a->b")

    def rationale(evidence: list[Evidence], timed: frozenset[str], **config: frozenset[str]) -> str:
        share = GapShare(1.0, 0.0, timed)
        hyps = score_hypotheses(
            evidence,
            graph=graph,
            window=window,
            symptom="front",
            edge_share=lambda e: share if e == "a" else GapShare(1.0, 0.0),
            config=ScoringConfig(**config),
        )
        return next(h.rationale for h in hyps if h.service == "a")

    assert "callee b" in rationale([slow_a, busy_b], frozenset())  # the calls were not timed: no objection
    assert "callee" not in rationale([slow_a, busy_b], frozenset({"b"}))  # timed, and never slow
    assert "callee b" in rationale([slow_a, busy_b, call], frozenset({"b"}))  # slow, and still
    assert "callee" not in rationale([slow_a, busy_b, replace(call, until=550.0)], frozenset({"b"}))  # slow no more
    own_side = GapShare(0.0, 0.8, frozenset({"b"}))  # a slowed most of its calls on its own side
    hyps = score_hypotheses(
        [slow_a, busy_b, call],
        graph=graph,
        window=window,
        symptom="front",
        edge_share=lambda e: own_side if e == "a" else GapShare(1.0, 0.0),
    )
    assert "callee" not in next(h.rationale for h in hyps if h.service == "a")
    assert "callee b" in rationale([slow_a, busy_b], frozenset({"b"}), off=frozenset({"calls"}))  # the switch


def test_a_spans_read_tells_which_calls_the_traces_timed() -> None:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    box = Toolbox(case.incident)
    services = sorted(asyncio.run(box.entities()))
    assert not any(box.edge_share(e).timed for e in services)  # no spans read yet
    asyncio.run(box.spans("ts-order-service"))  # the index of every call, read for one service
    callers = [e for e in services if box.edge_share(e).timed]
    assert callers
    # only the calls into or out of the service read are known to be timed
    assert all(c == "ts-order-service" or box.edge_share(c).timed == {"ts-order-service"} for c in callers)


def test_failed_calls_to_a_dependency_are_no_exception_of_the_caller() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b"), ("front", "c")])
    window = Window(0.0, 1000.0)

    def logs(i: int, entity: str, kind: EvidenceKind, score: float, detail: str) -> Evidence:
        return Evidence(
            EvidenceId(f"ev-{i}"), Modality.LOGS, kind, entity, f"T{i}", score, Signal.ERRORS, "q", detail, 600.0
        )

    cut = logs(2, "c", EvidenceKind.LOG_PATH_CUT, 8.0, "12 of 30 traces wrote 'start' without 'done'")
    text = "ERROR 'threw exception: No instances available for b' 3.0/min (new)"
    own = [logs(1, "a", EvidenceKind.LOG_ERROR_SHIFT, 20.0, text), cut]
    assert score_hypotheses(own, graph=graph, window=window, symptom="front")[0].service == "a"
    theirs = [logs(1, "a", EvidenceKind.LOG_DEPENDENCY_ERROR, 20.0, text), cut]
    top = score_hypotheses(theirs, graph=graph, window=window, symptom="front")[0]
    assert top.service == "c" and top.evidence == ("ev-2",)  # the cut path is what it cites


def test_an_anomaly_over_before_the_window_closed_weighs_less() -> None:
    graph = _with_quiet([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)
    evidence = [
        replace(_ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.CPU, 50.0, onset=300.0), until=500.0),
        _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 40.0, onset=600.0),
    ]
    assert score_hypotheses(evidence, graph=graph, window=window, symptom="front")[0].service == "b"
    blip = [replace(evidence[0], onset=None), replace(evidence[1], score=20.0)]  # one sample: no onset
    assert score_hypotheses(blip, graph=graph, window=window, symptom="front")[0].service == "b"  # but over
    evidence[0] = replace(evidence[0], until=None)  # going on at the close: this incident's
    assert score_hypotheses(evidence, graph=graph, window=window, symptom="front")[0].service == "a"
    off = ScoringConfig(off=frozenset({"timing"}))  # the rule switched off, the past counts as much
    evidence[0] = replace(evidence[0], until=500.0)
    assert score_hypotheses(evidence, graph=graph, window=window, symptom="front", config=off)[0].service == "a"


def test_the_symptoms_own_anomaly_sets_the_incident_time() -> None:
    """With no alert time, the symptom's anomaly going on at the close tells when the incident
    began: one over before it is another incident's, even if it ended late in the window."""
    graph = _with_quiet([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)
    symptom = replace(_ev(0, "front", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 30.0, onset=800.0))
    early = replace(_ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.CPU, 50.0, onset=300.0), until=700.0)
    late = _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 30.0, onset=790.0)
    top = score_hypotheses([symptom, early, late], graph=graph, window=window, symptom="front")
    assert [h.service for h in top][0] == "b"


def _errors(i: int, entity: str, score: float, shape: list[float]) -> Evidence:
    profile = tuple((600.0 + 60 * k, z) for k, z in enumerate(shape))
    return Evidence(
        EvidenceId(f"ev-{i}"),
        Modality.METRICS,
        EvidenceKind.METRIC_SHIFT,
        entity,
        "availability",
        score,
        Signal.ERRORS,
        "q",
        "d",
        600.0,
        -1,
        profile,
    )


def test_an_endpoint_seen_only_from_outside_defers_to_the_sibling_it_moves_with() -> None:
    # the front calls the search service and, for the same requests, its load balancer;
    # six more services stay quiet
    graph = _with_quiet([("front", "lb"), ("front", "search"), ("search", "db")])
    window = Window(0.0, 1200.0)
    shape = [0.0, 0.5, 30.0, 60.0, 58.0, 61.0]
    evidence = [_errors(1, "lb", 160.0, [3 * z for z in shape]), _errors(2, "search", 48.0, shape)]
    ranked = [h.service for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")]
    assert ranked[:2] == ["search", "lb"]
    # an endpoint with telemetry of its own (here its CPU) is a component, not a view
    inside = [*evidence, _ev(3, "lb", EvidenceKind.METRIC_SHIFT, Signal.CPU, 40.0, onset=600.0)]
    assert score_hypotheses(inside, graph=graph, window=window, symptom="front")[0].service == "lb"
    # and one whose anomaly does not move with the sibling's stays where it is
    apart = [_errors(1, "lb", 160.0, [60.0, 61.0, 59.0, 0.0, 0.5, 0.0]), evidence[1]]
    assert score_hypotheses(apart, graph=graph, window=window, symptom="front")[0].service == "lb"
    # coarse series that share only two samples cannot be correlated: anomalous in both, the
    # two move together; with the endpoint back to normal in one of them, they do not
    coarse = [_errors(1, "lb", 160.0, [4.0, 160.0]), _errors(2, "search", 48.0, [48.0, 40.0, 45.0])]
    assert score_hypotheses(coarse, graph=graph, window=window, symptom="front")[0].service == "search"
    coarse[0] = _errors(1, "lb", 160.0, [0.5, 160.0])
    assert score_hypotheses(coarse, graph=graph, window=window, symptom="front")[0].service == "lb"
    # anomalous in every sample they share, the two span the same time, however they wobble
    throughout = [
        _errors(1, "lb", 160.0, [160.0, 20.0, 90.0, 70.0]),
        _errors(2, "search", 48.0, [20.0, 48.0, 45.0, 44.0]),
    ]
    assert score_hypotheses(throughout, graph=graph, window=window, symptom="front")[0].service == "search"
    throughout[1] = _errors(2, "search", 48.0, [20.0, 48.0, 45.0, 1.0])
    assert score_hypotheses(throughout, graph=graph, window=window, symptom="front")[0].service == "lb"
    # a sibling that calls the endpoint itself is not behind it: the endpoint explains it
    calling = _with_quiet([("front", "lb"), ("front", "search"), ("search", "db"), ("search", "lb")])
    alike = [
        replace(_errors(i, name, score, shape), subject="latency", signal=Signal.LATENCY, direction=1)
        for i, name, score in ((1, "lb", 50.0), (2, "search", 48.0))
    ]
    assert score_hypotheses(alike, graph=calling, window=window, symptom="front")[0].service == "lb"


def test_a_callee_whose_anomaly_runs_with_the_caller_s_explains_it_slowed_or_failing() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)

    def latency(i: int, entity: str, score: float, shape: list[float]) -> Evidence:
        return replace(_errors(i, entity, score, shape), subject="latency", signal=Signal.LATENCY, direction=1)

    caller = latency(1, "a", 55.0, [55.0, 54.0, 0.0])
    along = [caller, latency(2, "b", 44.0, [40.0, 44.0, 2.0])]
    hyps = {h.service: h for h in score_hypotheses(along, graph=graph, window=window, symptom="front")}
    assert "callee b" in hyps["a"].rationale
    failing = [caller, _errors(2, "b", 44.0, [-40.0, -44.0, -2.0])]
    hyps = {
        h.service: h
        for h in score_hypotheses(
            failing, graph=graph, window=window, symptom="front", modalities=frozenset({Modality.METRICS})
        )
    }
    assert "callee b" in hyps["a"].rationale


def test_a_callee_that_only_slowed_explains_errors_only_when_it_stands_out_as_much() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)

    def errors_at_a_and_latency_at_b(latency: float) -> list[Evidence]:
        return [
            _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.ERRORS, 60.0),
            _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, latency),
        ]

    # b slowed to about three quarters of a's value: enough to explain a's slowness, not its errors
    mild = {
        h.service: h
        for h in score_hypotheses(errors_at_a_and_latency_at_b(8.0), graph=graph, window=window, symptom="front")
    }
    assert "callee" not in mild["a"].rationale
    severe = {
        h.service: h
        for h in score_hypotheses(errors_at_a_and_latency_at_b(400.0), graph=graph, window=window, symptom="front")
    }
    assert "callee b" in severe["a"].rationale


def test_an_anomaly_already_under_way_weighs_less() -> None:
    graph = nx.DiGraph([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)
    evidence = [
        replace(_ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.CPU, 40.0, onset=0.0), under_way=True),
        _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 40.0, onset=600.0),
    ]
    hyps = score_hypotheses(evidence, graph=graph, window=window, symptom="front")
    assert hyps[0].service == "b"
    assert all(h.value < hyps[0].value for h in hyps[1:])


def test_an_anomaly_that_began_after_the_alert_weighs_less() -> None:
    graph = _with_quiet([("front", "a"), ("front", "b")])
    window = Window(0.0, 1500.0)

    def cpu(i: int, entity: str, score: float, onset: float) -> Evidence:
        profile = tuple((t, score if t >= onset else 0.0) for t in (600.0, 900.0, 1200.0))
        return Evidence(
            EvidenceId(f"ev-{i}"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            entity,
            "cpu",
            score,
            Signal.CPU,
            "q",
            "d",
            onset,
            1,
            profile,
        )

    evidence = [cpu(1, "a", 30.0, 600.0), cpu(2, "b", 60.0, 1200.0)]
    assert score_hypotheses(evidence, graph=graph, window=window, symptom="front")[0].service == "b"
    # the symptom alerted at 500 s: b's move began two 5-minute samples after it
    after = score_hypotheses(evidence, graph=graph, window=window, symptom="front", alert_time=500.0)
    assert after[0].service == "a"
    # within a sample of the alert (coarse series) is no later than the symptom
    near = score_hypotheses(evidence, graph=graph, window=window, symptom="front", alert_time=950.0)
    assert near[0].service == "b"


def test_every_fault_type_can_be_named() -> None:
    graph = nx.DiGraph([("front", s) for s in "abcdef"])
    window = Window(0.0, 1000.0)
    cases = {
        "a": (Signal.CPU, "CpuUsageRate(%)"),
        "b": (Signal.MEMORY, "MemoryUsageRate(%)"),
        "c": (Signal.DISK, "disk_io_seconds"),
        "d": (Signal.PACKET_LOSS, "tcp_retransmits"),
        "e": (Signal.LATENCY, "latency_p99"),
        "f": (Signal.TRAFFIC, "requests_total"),
    }
    evidence = [
        Evidence(
            EvidenceId(f"ev-{i}"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            entity,
            metric,
            50.0,
            signal,
            "q",
            "d",
            500.0,
        )
        for i, (entity, (signal, metric)) in enumerate(cases.items(), start=1)
    ]
    faults = {
        h.service: h.fault_type.value
        for h in score_hypotheses(
            evidence, graph=graph, window=window, symptom="front", modalities=frozenset({Modality.METRICS})
        )
    }
    assert faults == {
        "a": "cpu",
        "b": "memory",
        "c": "disk",
        "d": "network_loss",
        "e": "network_delay",
        "f": "overload",
    }


def _log(i: int, entity: str, kind: EvidenceKind, score: float, detail: str, direction: int = 1) -> Evidence:
    return Evidence(
        EvidenceId(f"ev-{i}"),
        Modality.LOGS,
        kind,
        entity,
        f"T{i}",
        score,
        Signal.ERRORS if kind is EvidenceKind.LOG_ERROR_SHIFT else Signal.OTHER,
        "q",
        detail,
        500.0 if direction > 0 else None,
        direction,
    )


def test_memory_that_rose_with_the_cpu_is_a_cpu_fault_and_memory_first_a_memory_fault() -> None:
    graph = _with_quiet([("front", "a")])
    window = Window(0.0, 1000.0)

    def fault(cpu_onset: float | None, mem_onset: float | None) -> tuple[str, set[str]]:
        evidence = [
            _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.CPU, 40.0, onset=cpu_onset),
            _ev(2, "a", EvidenceKind.METRIC_SHIFT, Signal.MEMORY, 200.0, onset=mem_onset),
        ]
        (top, *_) = score_hypotheses(evidence, graph=graph, window=window, symptom="front")
        assert top.service == "a"
        return top.fault_type.value, set(top.evidence)

    both = {"ev-1", "ev-2"}
    assert fault(500.0, 510.0) == ("cpu", both)  # a CPU hog allocates as it goes: its memory is cited
    assert fault(None, None) == ("cpu", both)
    assert fault(600.0, 300.0)[0] == "memory"  # a leak first, then its collector's CPU
    assert fault(600.0, None)[0] == "memory"  # memory creeping or already up before the CPU rose


def test_a_wrong_result_needs_error_logs_and_a_silenced_code_path_is_an_exception() -> None:
    graph = _with_quiet([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)
    evidence = [
        # a: its query stopped logging and nothing took its place (thrown before the log line)
        _log(1, "a", EvidenceKind.LOG_FREQUENCY_SHIFT, 6.0, "INFO 'query start' ran 0.0/min", direction=-1),
        _log(2, "a", EvidenceKind.LOG_NEW_TEMPLATE, 4.0, "INFO 'retrying' 1.0/min (new)"),
        # b: the same silence, and an error of its own without an exception
        _log(3, "b", EvidenceKind.LOG_FREQUENCY_SHIFT, 6.0, "INFO 'found contacts' ran 0.0/min", direction=-1),
        _log(4, "b", EvidenceKind.LOG_ERROR_SHIFT, 20.0, "ERROR 'no contacts for this id' 5.0/min (new)"),
    ]
    faults = {h.service: h.fault_type for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")}
    assert faults == {"a": FaultType.EXCEPTION, "b": FaultType.WRONG_RESULT}


@pytest.mark.parametrize(
    "stack",
    [
        'Traceback (most recent call last):\n  File "shop.py", line 9, in discount\nKeyError: 3',  # Python
        "panic: runtime error: index out of range [3] with length 0\n\ngoroutine 7 [running]:",  # Go
        "java.lang.IllegalStateException: empty table\n\tat shop.Discounts.apply(Discounts.java:9)",  # Java
    ],
)
def test_an_error_line_that_carries_a_stack_of_any_common_runtime_is_an_exception(stack: str) -> None:
    graph = _with_quiet([("front", "a"), ("front", "b")])
    evidence = [
        _log(1, "a", EvidenceKind.LOG_ERROR_SHIFT, 20.0, f"ERROR 'request failed: <*>\n{stack}' 5.0/min (new)"),
        _log(2, "b", EvidenceKind.LOG_ERROR_SHIFT, 20.0, "ERROR 'request failed: <*>' 5.0/min (new)"),
    ]
    hyps = score_hypotheses(evidence, graph=graph, window=Window(0.0, 1000.0), symptom="front")
    assert {h.service: h.fault_type for h in hyps} == {"a": FaultType.EXCEPTION, "b": FaultType.WRONG_RESULT}


def test_a_slow_service_is_no_victim_of_a_callee_that_only_fails_less() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)

    def slow_a_failing_b(errors: float) -> dict[str, str]:
        evidence = [
            _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0),
            _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.ERRORS, errors),
        ]
        return {
            h.service: h.rationale
            for h in score_hypotheses(
                evidence, graph=graph, window=window, symptom="front", modalities=frozenset({Modality.METRICS})
            )
        }

    # b fails, most of what a slowed (enough to explain a slowness) but not all of it
    assert "callee" not in slow_a_failing_b(11.0)["a"]
    assert "callee b" in slow_a_failing_b(4000.0)["a"]  # b fails far more than a slowed


def test_evidence_read_twice_counts_once() -> None:
    graph = _with_quiet([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)
    once = [
        _log(1, "a", EvidenceKind.LOG_ERROR_SHIFT, 4.0, "ERROR 'no contacts' 1.0/min (new)"),
        _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 15.0),
    ]
    # a second branch read a's logs again: the same template shift, under a new id
    twice = [*once, replace(once[0], id=EvidenceId("ev-3"))]
    value = {h.service: h.value for h in score_hypotheses(once, graph=graph, window=window, symptom="front")}
    again = {h.service: h.value for h in score_hypotheses(twice, graph=graph, window=window, symptom="front")}
    assert value == again


def test_a_statement_whose_lines_changed_shape_did_not_stop() -> None:
    # one log statement (one code location): its lines gain two words mid-way (a date printed
    # with its time, say), so Drain mines a second template; the statement still runs as often
    def recs(t0: float, n: int, text: str, location: str) -> list[LogRecord]:
        return [LogRecord(t0 + i, "svc", Severity.INFO, text, location=location) for i in range(n)]

    def drops(location: str) -> list[float]:
        miner = new_miner()
        normal = mine(miner, recs(0, 40, "seat request for trip G1 on day 5", location) + recs(0, 40, "served", ""))
        now = mine(
            miner, recs(60, 40, "seat request for trip G1 on day 5 at hour 7", location) + recs(60, 40, "served", "")
        )
        return [s.score for s in template_shifts(normal, now) if "seat" in s.template and s.score < 0]

    assert min(drops("")) < -3  # where lines name no location, the old shape looks stopped
    assert all(score > -3 for score in drops("Impl#548"))


def test_a_callee_whose_anomaly_began_well_after_its_caller_s_answers_it() -> None:
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)

    def rationale(b_onset: float) -> str:
        evidence = [
            _log(1, "a", EvidenceKind.LOG_PATH_CUT, 20.0, "20 of 30 traces wrote 'start' without 'done'"),
            _ev(2, "b", EvidenceKind.METRIC_SHIFT, Signal.CPU, 12.0, onset=b_onset),
        ]
        return {
            h.service: h.rationale for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")
        }["b"]

    assert "began after anomalous caller a" in rationale(800.0)  # a's cut began at 500
    assert "caller" not in rationale(520.0)  # within the clocks' tolerance


def test_a_caller_is_a_suspect_from_when_the_evidence_it_is_suspected_on_began() -> None:
    # a's weak latency began early, its cut code path later, just before its callee b threw
    graph = _with_quiet([("front", "a"), ("a", "b")])
    window = Window(0.0, 1000.0)

    def rationale(latency_onset: float) -> str:
        evidence = [
            _ev(1, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 4.0, onset=latency_onset),
            _log(2, "a", EvidenceKind.LOG_PATH_CUT, 20.0, "20 of 30 traces wrote 'start' without 'done'"),
            replace(
                _log(3, "b", EvidenceKind.LOG_ERROR_SHIFT, 30.0, "ERROR 'NullPointerException' 5.0/min (new)"),
                onset=520.0,
            ),
        ]
        return {
            h.service: h.rationale for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")
        }["a"]

    assert "callee b" in rationale(300.0)
    assert "callee b" in rationale(520.0)


def test_a_service_whose_failed_calls_name_a_callee_is_explained_only_through_it() -> None:
    # a calls b and c; its error lines name c; b has errors of its own, c is quiet
    graph = _with_quiet([("front", "a"), ("a", "b"), ("a", "c")])
    window = Window(0.0, 1000.0)

    def rationale(named: tuple[str, ...]) -> str:
        evidence = [
            _log(1, "a", EvidenceKind.LOG_PATH_CUT, 20.0, "20 of 30 traces wrote 'start' without 'done'"),
            replace(
                _log(2, "a", EvidenceKind.LOG_DEPENDENCY_ERROR, 6.0, "ERROR 'No instances available' 1.0/min (new)"),
                peers=named,
            ),
            _log(3, "b", EvidenceKind.LOG_ERROR_SHIFT, 6.0, "ERROR 'order not found' 2.0/min (was 1.0/min)"),
        ]
        return {
            h.service: h.rationale for h in score_hypotheses(evidence, graph=graph, window=window, symptom="front")
        }["a"]

    assert "callee b" in rationale(("b",))
    assert "callee" not in rationale(("c",))  # a failed on c, not on b


def test_errors_that_stopped_are_no_evidence_but_a_silenced_path_is() -> None:
    from rca.model import CaseId, Incident, Normal, Sources
    from rca.sources.memory import InMemoryLogs

    def minute(t0: float, errors: bool, queries: bool) -> list[LogRecord]:
        out = [LogRecord(t0 + i, "svc", Severity.INFO, f"served request {i}") for i in range(40)]
        out += [LogRecord(t0 + i, "svc", Severity.ERROR, f"connection to db refused {i}") for i in range(20) if errors]
        out += [LogRecord(t0 + i, "svc", Severity.INFO, f"query start for route {i}") for i in range(20) if queries]
        return out

    back = [r for m in range(5) for r in minute(m * 60.0, errors=True, queries=True)]
    now = [r for m in range(5, 10) for r in minute(m * 60.0, errors=False, queries=False)]
    incident = Incident(
        CaseId("synthetic"),
        "synthetic",
        "svc",
        Window(300.0, 600.0),
        Sources(logs=InMemoryLogs(now)),
        {Modality.LOGS: Normal(Window(0.0, 300.0), Sources(logs=InMemoryLogs(back)))},
    )
    found = asyncio.run(Toolbox(incident).logs("svc")).evidence
    assert any("query start" in e.detail and e.direction < 0 for e in found)
    assert not any("refused" in e.detail for e in found)


def test_a_logs_scan_the_budget_cannot_pay_for_glances_at_error_counts_for_one_read() -> None:
    from rca.model import CaseId, Incident, Normal, Sources
    from rca.sources.memory import InMemoryLogs

    def lines(t0: float, service: str, n: int, errors: int) -> list[LogRecord]:
        out = [LogRecord(t0 + i, service, Severity.INFO, f"served request {i}") for i in range(n)]
        return out + [LogRecord(t0 + i + 0.5, service, Severity.ERROR, f"call to db failed {i}") for i in range(errors)]

    def minutes(start: int, stop: int, failing: str, busy: str) -> list[LogRecord]:
        out = []
        for m in range(start, stop):
            for s in ("cart", "pay", "ship", "mail", "auth", "user"):
                late = m >= 7  # the incident began two minutes before the window's end
                n = 80 if s == busy and late else 40  # twice the traffic, its errors in proportion
                errors = 12 if s == failing and late else (2 if s == busy and late else 1)
                out += lines(m * 60.0, s, n, errors)
        return out

    def incident(failing: str, busy: str) -> Incident:
        back, now = minutes(0, 5, failing, busy), minutes(5, 10, failing, busy)
        return Incident(
            CaseId("synthetic"),
            "synthetic",
            "cart",
            Window(300.0, 600.0),
            Sources(logs=InMemoryLogs(now)),
            {Modality.LOGS: Normal(Window(0.0, 300.0), Sources(logs=InMemoryLogs(back)))},
        )

    async def go(failing: str, busy: str) -> None:
        box = Toolbox(incident(failing, busy), budget=3)  # six services' lines cost six reads
        glance = await box.scan("logs")
        assert glance.status == "ok" and glance.leads[0] == failing and busy not in glance.leads and box.reads == 1
        assert (await box.logs(failing)).evidence and box.reads == 2  # the glance read no service's lines
        refused = await Toolbox(incident(failing, busy), budget=3, glance=False).scan("logs")
        assert refused.status == "budget"
        everything = Toolbox(incident(failing, busy), budget=6)  # affordable: the full scan, as before
        await everything.scan("logs")
        assert everything.reads == 6

    asyncio.run(go("pay", "auth"))
    asyncio.run(go("mail", "ship"))  # renamed roles: the counts decide, not the names


def test_a_repeated_read_finds_the_same_evidence_not_new_copies_of_it() -> None:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    box = Toolbox(case.incident)

    async def go() -> list[list[str]]:
        reads = [
            await box.metrics("ts-contacts-service"),
            await box.logs("ts-contacts-service"),
            await box.metrics("ts-contacts-service"),
            await box.logs("ts-contacts-service"),
        ]
        return [[e.id for e in r.evidence] for r in reads]

    metrics, logs, metrics_again, logs_again = asyncio.run(go())
    assert metrics and metrics == metrics_again and logs == logs_again
    assert not set(metrics) & set(logs)


def test_a_read_budget_counts_reads_as_the_backends_are_queried() -> None:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)

    async def go() -> None:
        box = Toolbox(case.incident, budget=3)
        await box.logs("ts-contacts-service")
        await box.logs("ts-contacts-service")  # a repeat is free
        assert box.reads == 1
        await box.scan("metrics")  # one query reads every service's metrics ...
        assert box.reads == 2
        assert (await box.metrics("ts-order-service")).status != "budget" and box.reads == 2  # ... so these are paid
        await box.spans("ts-contacts-service")
        assert box.reads == 3 and box.exhausted
        refused = await box.logs("ts-order-service")
        assert refused.status == "budget" and not refused.evidence and box.reads == 3
        assert sum("read budget of 3 spent" in m for m in box.missing) == 1
        logs_scan = await Toolbox(case.incident, budget=2, glance=False).scan(
            "logs"
        )  # one read per service: over budget
        assert logs_scan.status == "budget"
        unlimited = Toolbox(case.incident)
        await unlimited.scan("logs")  # one read per service with lines in the window
        logged = {r.entity for r in await case.incident.sources.logs.records(LogQuery(case.incident.window))}
        assert unlimited.reads == len(logged & set(await unlimited.entities())) and not unlimited.exhausted
        traced = Toolbox(case.incident, budget=1)
        assert (
            await traced.spans("not-a-traced-service")
        ).status == "no_data" and traced.reads == 0  # held by no backend: free
        assert (await traced.spans("ts-contacts-service")).status == "ok" and traced.reads == 1

    asyncio.run(go())


def test_a_normal_that_never_moved_is_measured_in_its_peers_spread_whatever_the_unit() -> None:
    rng = np.random.default_rng(4)
    t0 = 1_700_000_000.0
    before, during = t0 + 5 * np.arange(60), t0 + 300 + 5 * np.arange(24)

    def fleet(unit: float) -> tuple[list[Series], list[Series]]:
        normal, now = [], []
        for i in range(5):  # five services whose GC rate moves a little all along
            normal.append(Series(f"s{i}", "GcCollections", before, unit * (1 + 0.1 * rng.standard_normal(60))))
            now.append(Series(f"s{i}", "GcCollections", during, unit * (1 + 0.1 * rng.standard_normal(24))))
        quiet = np.zeros(24)
        quiet[12:] = unit * 0.05  # one that never collected, now at a twentieth of its peers' rate
        normal.append(Series("idle", "GcCollections", before, np.zeros(60)))
        now.append(Series("idle", "GcCollections", during, quiet))
        return normal, now

    def idle(shifts: list) -> float:  # type: ignore[type-arg]
        return next(m.score for m in shifts if m.entity == "idle")

    normal, now = fleet(1.0)
    assert idle(metric_shifts(normal, now)) < 2  # small against what even its steadiest peer moves by
    assert idle(metric_shifts(normal, now, peers=False)) == MAX_Z  # the ablation: a zero spread, the cap
    scaled = fleet(1000.0)  # another unit: the same standing
    assert idle(metric_shifts(*scaled)) == pytest.approx(idle(metric_shifts(normal, now)), rel=0.3)


def test_without_normal_log_lines_no_template_is_new_and_error_lines_still_count() -> None:
    """A template is new, or its rate shifted, only against normal lines: with none read
    (a recording that begins at the fault, a service with no log history), every template
    would be "new". What a line says, an error, needs no normal."""
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    bare = replace(case.incident, normal={m: n for m, n in case.incident.normal.items() if m is not Modality.LOGS})
    with_normal, without = Toolbox(case.incident), Toolbox(bare)
    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    read = [e for s in sorted(graph) for e in asyncio.run(with_normal.logs(s)).evidence]
    bare_read = [e for s in sorted(graph) for e in asyncio.run(without.logs(s)).evidence]
    shifted = (EvidenceKind.LOG_FREQUENCY_SHIFT, EvidenceKind.LOG_NEW_TEMPLATE)
    assert any(e.kind in shifted for e in read)
    assert bare_read and all(e.signal is Signal.ERRORS and e.kind not in shifted for e in bare_read)
    assert any("normal logs: absent, so no template is new" in m for m in without.missing)


def _calls(t0: float, minutes: int, callee: str, *, failed: bool, late: bool = False, caller: str = "a") -> list[Span]:
    """A call a second from caller to callee, the callee's answer in 20 ms (or after the caller's
    50 ms, `late`) and never an error, the caller's call failed or not."""
    out = []
    for i in range(60 * minutes):
        t, tid = t0 + i, f"{caller}{callee}{t0}{i}"
        end = t + (0.3 if late else 0.02)
        out += [
            Span(tid, "c", "", caller, "GET /work", t, t + 0.05, SpanStatus.ERROR if failed else SpanStatus.UNSET),
            Span(tid, "s", "c", callee, "GET /work", t + 0.01, end),
        ]
    return out


def test_calls_a_callee_answered_in_time_as_a_success_that_its_caller_failed_are_its_wrong_answers() -> None:
    """A caller fails the calls to one callee whose own spans answered them, fast and without
    error: what that callee answered was wrong. Calls a callee answered after the caller gave
    up are no wrong answer, and a caller that fails the answers of most of its callees, in
    time or late, fails them on its own side (its deadline, its reading)."""
    normal = _calls(0.0, 5, "b", failed=False) + _calls(0.0, 5, "c", failed=False)
    now = _calls(1000.0, 5, "b", failed=False) + _calls(1000.0, 5, "c", failed=False)
    now += _calls(1300.0, 4, "b", failed=True) + _calls(1300.0, 4, "c", failed=False)
    (found,) = wrong_answers(normal, now, min_z=3.0)
    assert (found.callee, found.callers, found.count) == ("b", ("a",), 240)
    assert found.onset == pytest.approx(1260.0, abs=60.0) and found.until is None
    assert wrong_answers(normal, now + _calls(1300.0, 4, "d", failed=True, late=True, caller="f"), min_z=3.0) == [found]
    own_side = _calls(1300.0, 4, "b", failed=True, caller="e") + _calls(1300.0, 4, "c", failed=True, caller="e")
    assert [w.callers for w in wrong_answers(normal, now + own_side, min_z=3.0)] == [("a",)]
    deadline = _calls(1300.0, 4, "b", failed=True, caller="e") + _calls(
        1300.0, 4, "c", failed=True, late=True, caller="e"
    )
    assert [w.callers for w in wrong_answers(normal, now + deadline, min_z=3.0)] == [("a",)]


def test_a_callee_s_wrong_answers_are_read_from_either_end_and_can_be_switched_off() -> None:
    spans = (
        _calls(0.0, 5, "b", failed=False) + _calls(1000.0, 5, "b", failed=False) + _calls(1300.0, 4, "b", failed=True)
    )
    incident = Incident(CaseId("wrong"), "test", "a", Window(900.0, 1600.0), Sources(traces=InMemoryTraces(spans)))

    async def kinds(entity: str, **options: bool) -> set[tuple[str, EvidenceKind]]:
        found = await Toolbox(incident, **options).spans(entity)
        return {(ev.entity, ev.kind) for ev in found.evidence}

    wrong = ("b", EvidenceKind.TRACE_WRONG_ANSWER)
    assert wrong in asyncio.run(kinds("b")) and wrong in asyncio.run(kinds("a"))
    assert wrong not in asyncio.run(kinds("b", wrong_answers=False))  # --ablate wrong-answers


def _requests(
    t0: float, minutes: int, *, tries: int = 1, calls: int = 2, every: float = 1.0, gave_up: bool = True
) -> list[Span]:
    """Requests into a, one each `every` seconds; each sends `calls` calls to b, each call
    sent `tries` times: the first tries failed at 50 ms, b answering after a gave up on them
    (`gave_up`) or within them, with an error."""
    out = []
    for i in range(int(60 * minutes / every)):
        t, tid = t0 + i * every, f"r{t0}-{i}"
        out.append(Span(tid, "r", "", "a", "GET /", t, t + 0.5))
        for c in range(calls):
            for k in range(tries):
                cid, at, last = f"c{c}-{k}", t + 0.01 + 0.06 * k, k == tries - 1
                answered = at + (0.04 if last or not gave_up else 0.08)
                failed = SpanStatus.UNSET if last else SpanStatus.ERROR
                out += [
                    Span(tid, cid, "r", "a", "GET /work", at, at + 0.05, failed),
                    Span(
                        tid,
                        f"s{c}-{k}",
                        cid,
                        "b",
                        "GET /work",
                        at + 0.005,
                        answered,
                        failed if not gave_up else SpanStatus.UNSET,
                    ),
                ]
    return out


def test_calls_a_service_gave_up_on_and_sent_again_more_often_per_request_than_normally_are_its_retry_storm() -> None:
    """A request's calls follow from its code: two calls to b per request, in the normal period
    and in the window, until a gives up on each call at 50 ms while b still works on it, and
    sends it again, three times in all. Load that arrives (twice the requests, the same calls
    per request), a path cut short (fewer calls), calls sent again after b answered them with
    an error, and spans that record no caller-side end of a call are no storm of a's making."""
    normal = _requests(0.0, 5)
    now = _requests(1000.0, 5) + _requests(1300.0, 4, tries=3)
    (found,) = repeated_calls(normal, now, min_z=3.0)
    assert (found.caller, found.subject) == ("a", "GET / -> b GET /work")
    assert found.sent == 4 * 240 and found.expected == 0.0  # two of each call's three tries, per request
    assert found.onset == pytest.approx(1300.0, abs=60.0) and found.until is None
    assert repeated_calls(normal[::-1], now[::-1], min_z=3.0) == [found]  # the order read decides nothing
    busier = _requests(1000.0, 5) + _requests(1300.5, 4)
    assert repeated_calls(normal, busier, min_z=3.0) == []
    assert repeated_calls(normal, _requests(1000.0, 5) + _requests(1300.0, 4, calls=1), min_z=3.0) == []
    answered = _requests(1000.0, 5) + _requests(1300.0, 4, tries=3, gave_up=False)
    assert repeated_calls(normal, answered, min_z=3.0) == []  # sent again after b's error: b's doing
    # a layout without the caller's own call spans (b's server spans straight under a's
    # request, as Nezha's) cannot show a give-up
    assert repeated_calls(_direct(normal), _direct(now), min_z=3.0) == []


def _direct(spans: list[Span]) -> list[Span]:
    """The spans with the caller's call spans left out, its callees' hung under its request."""
    return [replace(s, parent_id="r") if s.entity == "b" else s for s in spans if s.entity == "b" or s.parent_id == ""]


def test_calls_sent_again_and_again_are_the_sender_s_evidence_and_can_be_switched_off() -> None:
    traces = InMemoryTraces(_requests(0.0, 5) + _requests(1000.0, 5) + _requests(1300.0, 4, tries=3))
    normal = Normal(Window(0.0, 900.0), Sources(traces=traces))
    incident = Incident(CaseId("storm"), "test", "a", Window(900.0, 1600.0), Sources(traces=traces))
    incident = replace(incident, normal={Modality.TRACES: normal})

    async def kinds(entity: str, **options: bool) -> set[tuple[str, EvidenceKind]]:
        found = await Toolbox(incident, **options).spans(entity)
        return {(ev.entity, ev.kind) for ev in found.evidence}

    repeats = ("a", EvidenceKind.TRACE_REPEATED_CALLS)
    assert repeats in asyncio.run(kinds("a"))
    assert repeats not in asyncio.run(kinds("b"))  # a read of the callee does not show them
    assert repeats not in asyncio.run(kinds("a", repeats=False))  # --ablate repeats
