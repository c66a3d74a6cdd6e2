"""Evaluation protocols and the harness: windows placed as a user would ask, modalities hidden,
and one broken case never stopping the others."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rca.calibration import trace_features
from rca.changes import LOOK_BACK, Change, ChangeKind
from rca.engines import build_engine
from rca.errors import InputError
from rca.evaluation.harness import evaluate
from rca.evaluation.protocols import (
    AFTER_SECONDS,
    REACH_SECONDS,
    Placement,
    Protocol,
    parse_protocol,
    realistic_window,
)
from rca.evaluation.report import summaries, to_json
from rca.model import BrokenCase, Diagnosis, Incident, IncidentCase, Modality
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery


def test_realistic_windows_end_minutes_after_the_fault_and_reach_back() -> None:
    start = 1_700_000_000.0
    seen_reach = set()
    for i in range(200):
        w = realistic_window(f"set/case-{i}", start)
        assert AFTER_SECONDS[0] <= w.end - start <= AFTER_SECONDS[1]
        assert w.seconds in REACH_SECONDS
        seen_reach.add(w.seconds)
    assert seen_reach == set(REACH_SECONDS)  # every reach is drawn
    assert realistic_window("set/case-1", start) == realistic_window("set/case-1", start)  # the same every run
    # the fault falls in the window's last minutes, not near its middle
    w = realistic_window("set/case-7", start)
    assert (start - w.start) / w.seconds > 0.6


def test_placement_on_the_nezha_slice_drops_the_alert_and_moves_the_look_back(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    assert case.label.start is not None
    placed = asyncio.run(Protocol().place(case))
    assert placed.alert_time is None
    assert 60 <= placed.window.end - case.label.start <= 300
    normal = placed.normal_for(Modality.METRICS)
    assert normal is not None and normal.window.end == placed.window.start
    centred = asyncio.run(Protocol(Placement.CENTRED).place(case))
    assert centred.window == case.incident.window


def test_coarse_series_end_the_window_after_the_first_sample_of_the_fault(petshop_slice: Path) -> None:
    """An alert fires on a sample that shows the fault: on 5-minute data the window reaches it."""
    for case in find_cases(petshop_slice):
        placed = asyncio.run(Protocol().place(case))
        assert placed.alert_time is None
        start = case.label.start
        assert start is not None
        series = asyncio.run(placed.sources.metrics.series(MetricQuery(placed.window)))  # type: ignore[union-attr]
        assert any(t >= start for s in series for t in s.timestamps)


def test_hidden_modalities_are_absent_with_their_normal_and_said(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    placed = asyncio.run(parse_protocol("realistic", "logs,traces").place(case))
    assert placed.sources.modalities() == {"metrics": True, "logs": False, "traces": False}
    assert Modality.LOGS not in placed.normal and Modality.TRACES not in placed.normal
    assert "logs: hidden by the evaluation protocol" in placed.notes
    assert placed.sources.topology is not None  # the call graph is its own input
    bare = asyncio.run(parse_protocol("centred", "topology").place(case))
    assert bare.sources.topology is None


def test_bystander_changes_are_planted_around_the_window_never_on_the_labelled_service(
    nezha_slice: Path, petshop_slice: Path
) -> None:
    for case in [*find_cases(nezha_slice), *find_cases(petshop_slice)]:
        protocol = parse_protocol("realistic", bystanders=5)
        placed = asyncio.run(protocol.place(case))
        again = asyncio.run(protocol.place(case))
        assert placed.changes == again.changes and len(placed.changes) == 5  # drawn from the case id
        length = placed.window.end - placed.window.start
        for c in placed.changes:
            assert c.service != case.label.service and c.source == "planted"
            assert placed.window.start - length <= c.time <= placed.window.end
        assert len({c.time for c in placed.changes}) == 5
        assert any("bystanders planted" in n for n in placed.notes) and "5 bystander changes" in protocol.name
        assert asyncio.run(Protocol().place(case)).changes == ()


def test_a_placed_incident_knows_only_the_changes_made_by_its_window_s_close(nezha_slice: Path) -> None:
    """The window's close is when the question is asked: a change after it had not happened,
    one in the hour before the window may have started what it shows, one long before is not
    read, under every placement."""
    (case,) = find_cases(nezha_slice)
    start = case.label.start
    assert start is not None
    at = [start - 7300.0, start - 1800.0, start, start + 60.0, start + 400.0, start + 5000.0]
    changes = tuple(Change(f"svc-{i}", ChangeKind.DEPLOY, t, "1", "2") for i, t in enumerate(at))
    case = replace(case, incident=replace(case.incident, changes=changes))
    for placement in Placement:
        placed = asyncio.run(Protocol(placement).place(case))
        window = placed.window
        expected = [c for c in changes if window.start - LOOK_BACK <= c.time <= window.end]
        assert list(placed.changes) == expected and expected, placement
        assert all(c.time <= window.end for c in placed.changes)
    realistic = asyncio.run(Protocol().place(case))
    assert [c.service for c in realistic.changes] == ["svc-1", "svc-2", "svc-3"]  # the close is 1-5 min after


def test_a_bad_protocol_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="unknown protocol"):
        parse_protocol("sideways")
    with pytest.raises(InputError, match="cannot hide"):
        parse_protocol("realistic", "logs,dreams")
    with pytest.raises(InputError, match="bystander changes"):
        parse_protocol("realistic", bystanders=-1)


class _Breaks:
    """An engine with a bug that one incident triggers: what the harness must survive."""

    name = "breaks"

    def __init__(self, bad: str) -> None:
        self.bad = bad
        self.inner = build_engine("baro")

    async def investigate(self, incident: Incident) -> Diagnosis:
        if incident.id == self.bad:
            raise ZeroDivisionError("a bug this incident triggers")
        diagnosis = await self.inner.investigate(incident)
        return Diagnosis(diagnosis.incident_id, self.name, diagnosis.ranking)


def test_a_case_that_breaks_the_engine_is_an_error_and_the_rest_finish(petshop_slice: Path) -> None:
    cases = find_cases(petshop_slice)
    assert len(cases) == 2
    results = asyncio.run(evaluate([_Breaks(cases[0].id)], cases))
    assert [r.outcome.case_id for r in results] == [c.id for c in cases]
    first, second = results
    assert first.error is not None and "ZeroDivisionError" in first.error and first.outcome.ranked == ()
    assert second.error is None and second.outcome.ranked
    (row,) = [s for s in summaries(results) if s.group == "all"]
    assert row.cases == 2 and row.errors == 1
    doc = to_json(results, protocol="realistic")
    assert doc["protocol"] == "realistic"
    assert [c["error"] is None for c in doc["cases"]] == [False, True]
    json.dumps(doc)  # serialisable as written


def test_an_unreadable_case_is_counted_as_a_miss_with_its_reason(petshop_slice: Path, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shutil.copytree(petshop_slice, root)
    (root / "low_traffic" / "test" / "issue_2" / "target.json").write_text('{"target": {}}')
    broken: list[BrokenCase] = []
    cases = find_cases(root, broken=broken)
    assert [c.id for c in cases] == ["shop/low_traffic/test/issue_12"]
    assert [b.id for b in broken] == ["shop/low_traffic/test/issue_2"] and "target.json" in broken[0].reason
    results = asyncio.run(evaluate([build_engine("baro")], cases, broken=broken))
    (row,) = [s for s in summaries(results) if s.group == "all"]
    assert row.cases == 2 and row.errors == 1 and row.ac1 <= 0.5


def test_every_case_of_both_slices_is_placed_inside_its_data(nezha_slice: Path, petshop_slice: Path) -> None:
    cases: list[IncidentCase] = find_cases(nezha_slice) + find_cases(petshop_slice)
    for case in cases:
        for protocol in (Protocol(), Protocol(Placement.CENTRED)):
            placed = asyncio.run(protocol.place(case))
            assert placed.window.seconds > 0
            assert placed.id == case.id and placed.symptom == case.incident.symptom


def test_an_evaluation_lets_each_trace_go_and_reads_of_it_what_it_kept(petshop_slice: Path) -> None:
    """An evaluation holds its cases' answers, not every case's reasoning: the trace is let
    go once the report's readings are taken from it, and those readings are the ones the
    whole trace gives."""
    cases = find_cases(petshop_slice)
    lean = asyncio.run(evaluate([build_engine("lats")], cases))
    kept = asyncio.run(evaluate([build_engine("lats")], cases, keep_traces=True))
    assert all(r.diagnosis.trace is None for r in lean)
    assert all(r.diagnosis.trace is not None for r in kept)
    assert [(r.features, r.tied) for r in lean] == [(r.features, r.tied) for r in kept]
    assert [r.features for r in kept] == [trace_features(r.diagnosis.trace) for r in kept if r.diagnosis.trace]
    strip = [{k: v for k, v in c.items() if k != "seconds"} for c in to_json(lean)["cases"]]
    assert strip == [{k: v for k, v in c.items() if k != "seconds"} for c in to_json(kept)["cases"]]
