import asyncio
import csv
import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import jsonschema
import networkx as nx
import pytest

from rca.engines import build_engine
from rca.engines.lats import VARIANTS, SearchEngine, Variant, ablate
from rca.evaluation.protocols import Placement, Protocol
from rca.evidence.metrics import MetricShift
from rca.model import Incident, IncidentCase, Modality
from rca.replay import with_window
from rca.rules.timing import REOPEN, opened_back, opened_late
from rca.search.actions import AgentKind
from rca.search.config import SearchConfig
from rca.search.events import Finished, Handoff, HypothesesRanked
from rca.signals import Signal
from rca.sources.datasets import find_cases
from rca.sources.memory import StaticTopology
from rca.telemetry import Window, to_iso
from rca.trace import STAGES, replay
from rca.trace_json import from_json, to_json


@pytest.fixture(scope="module")
def case() -> IncidentCase:
    from tests.conftest import NEZHA_SLICE

    (only,) = find_cases(NEZHA_SLICE)
    return only


async def _events(engine: SearchEngine, incident: Incident) -> list:
    return [e async for e in engine.stream(incident)]


def test_same_seed_same_trace(case: IncidentCase) -> None:
    engine = build_engine("lats")
    first = asyncio.run(engine.investigate(case.incident)).trace
    second = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    assert first is not None and second is not None
    for doc in (first, second):
        doc["cost"]["seconds"] = 0
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_another_seed_explores_differently(case: IncidentCase) -> None:
    base = VARIANTS["lats"]
    other = SearchEngine(Variant("lats", base.order, replace(base.config, seed=7)))
    a = asyncio.run(_events(build_engine("lats"), case.incident))  # type: ignore[arg-type]
    b = asyncio.run(_events(other, case.incident))
    assert [repr(e) for e in a if not isinstance(e, Finished)] != [repr(e) for e in b if not isinstance(e, Finished)]


def test_stream_ends_with_a_valid_trace_and_names_the_culprit(case: IncidentCase) -> None:
    events = asyncio.run(_events(build_engine("lats"), case.incident))  # type: ignore[arg-type]
    assert isinstance(events[-1], Finished)
    assert any(isinstance(e, HypothesesRanked) for e in events)
    trace = events[-1].trace
    assert set(STAGES) <= set(trace)
    ranked = [r["service"] for r in trace["decision_report"]["ranking"]]
    assert "ts-contacts-service" in ranked[:3]
    ids = {ev["id"] for ev in trace["evidence_package"]["evidence"]}
    for h in trace["hypothesis_set"]["hypotheses"]:  # every hypothesis cites package evidence
        assert h["evidence"] and set(h["evidence"]) <= ids
    for chain in trace["analysis_structure"]["chains"]:
        for link in chain["links"]:
            assert set(link["evidence"]) <= ids


def test_trace_json_round_trip(case: IncidentCase) -> None:
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    assert doc is not None
    doc["evidence_package"]["evidence"][0]["peers"] = ["ts-basic-service"]  # as a failed call names its callee
    again = to_json(from_json(json.loads(json.dumps(doc))))
    assert again == doc


def test_an_alert_time_survives_the_round_trip_and_the_replay(petshop_slice: Path) -> None:
    (case, *_) = find_cases(petshop_slice)
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    assert doc is not None and doc["evidence_package"]["alert_time"] is not None
    trace = from_json(json.loads(json.dumps(doc)))
    assert trace.evidence_package.alert_time == case.incident.alert_time
    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    assert to_json(replay(trace, graph=graph, start="hypothesis_set")) == doc


def test_stage_replay_reproduces_the_downstream_stages(case: IncidentCase) -> None:
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    trace = from_json(doc)  # type: ignore[arg-type]
    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    for start in STAGES[1:]:
        assert to_json(replay(trace, graph=graph, start=start)) == doc
    # replaying on a changed evidence package changes what follows
    ep = trace.evidence_package
    lead = trace.hypotheses[0].service
    pruned = replace(trace, evidence_package=replace(ep, evidence=tuple(e for e in ep.evidence if e.entity != lead)))
    again = replay(pruned, graph=graph)
    assert again.hypotheses[0].service != lead
    with pytest.raises(ValueError):
        replay(trace, graph=graph, start="evidence_package")


def test_handoff_when_reflection_falls_below_thresholds(case: IncidentCase) -> None:
    cfg = SearchConfig(iterations_per_agent=4, rounds=1, handoff_r=1.01, min_iterations_before_handoff=2)
    eager = SearchEngine(Variant("lats", (AgentKind.METRIC, AgentKind.LOG), cfg))
    events = asyncio.run(_events(eager, case.incident))
    handoffs = [e for e in events if isinstance(e, Handoff)]
    assert handoffs and "insufficient progress" in handoffs[0].reason
    ranked = [e for e in events if isinstance(e, HypothesesRanked) and e.agent is AgentKind.METRIC]
    assert len(ranked) == 2  # handed off after the minimum number of iterations

    patient = SearchEngine(
        Variant(
            "lats",
            (AgentKind.METRIC, AgentKind.LOG),
            replace(cfg, handoff_r=0.0, handoff_c_comp=0.0, confirm_value=2.0),
        )
    )
    events = asyncio.run(_events(patient, case.incident))
    assert [e.reason for e in events if isinstance(e, Handoff)][0] == "turn budget spent"


@pytest.mark.parametrize("hidden", [(Modality.LOGS,), (Modality.TRACES,), (Modality.LOGS, Modality.TRACES)])
def test_missing_modalities_still_rank_and_are_reported(case: IncidentCase, hidden: tuple[Modality, ...]) -> None:
    incident = replace(case.incident, sources=case.incident.sources.without(*hidden))
    diagnosis = asyncio.run(build_engine("lats").investigate(incident))
    assert diagnosis.ranking
    for m in hidden:
        assert f"{m}: absent" in diagnosis.missing
    assert diagnosis.trace is not None and all(not diagnosis.trace["evidence_package"]["modalities"][m] for m in hidden)


def test_a_source_with_nothing_for_the_window_is_reported(tmp_path: Path) -> None:
    """Logs kept for other minutes only (as when a system's log files were not all kept):
    the source exists, the window has none of it, and the verdict says so."""
    from tests.conftest import NEZHA_SLICE

    root = tmp_path / "nezha-trainticket"
    shutil.copytree(NEZHA_SLICE, root)
    for f in (root / "rca_data").glob("*/log/13_*_log.csv.gz"):
        f.rename(f.with_name(f.name.replace("13_", "03_", 1)))  # the same lines, filed hours earlier
    (case,) = find_cases(root)
    diagnosis = asyncio.run(build_engine("lats").investigate(case.incident))
    assert diagnosis.ranking
    assert "logs: no records in the window" in diagnosis.missing
    assert diagnosis.trace is not None  # and no service is taken to have fallen silent
    assert not [e for e in diagnosis.trace["evidence_package"]["evidence"] if e["modality"] == "logs"]
    callless = replace(case.incident, sources=replace(case.incident.sources, topology=StaticTopology(nx.DiGraph())))
    assert "topology: no calls seen" in asyncio.run(build_engine("lats").investigate(callless)).missing
    assert not any(
        "no records" in m
        for m in asyncio.run(build_engine("lats").investigate(find_cases(NEZHA_SLICE)[0].incident)).missing
    )


@pytest.mark.parametrize("name", ["linear", "linear-multi"])
def test_linear_engines_follow_one_trajectory(case: IncidentCase, name: str) -> None:
    diagnosis = asyncio.run(build_engine(name).investigate(case.incident))
    assert diagnosis.ranking and diagnosis.cost.iterations <= 12


@pytest.mark.parametrize("ablation", ["batching", "backprop", "reflection", "check"])
def test_ablations_run(case: IncidentCase, ablation: str) -> None:
    engine = build_engine("lats", ablation=ablation)
    assert engine.name == f"lats-no-{ablation}"
    assert asyncio.run(engine.investigate(case.incident)).ranking


@pytest.mark.parametrize("name,repair", [("lats", False), ("linear", False), ("linear-multi", False), ("lats", True)])
def test_every_engine_that_writes_a_trace_writes_one_the_schema_accepts(
    case: IncidentCase, name: str, repair: bool
) -> None:
    from rca.trace_json import schema

    doc = asyncio.run(build_engine(name, repair=repair).investigate(case.incident)).trace
    assert doc is not None
    jsonschema.validate(json.loads(json.dumps(doc)), schema())


def test_trace_file_on_disk_validates(case: IncidentCase, tmp_path: Path) -> None:
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    assert from_json(json.loads(path.read_text())).decision.ranking  # the engine's trace is the schema's
    broken = json.loads(path.read_text())
    broken["hypothesis_set"]["hypotheses"][0]["evidence"] = ["not-an-id"]
    with pytest.raises(jsonschema.ValidationError):
        from_json(broken)


def test_before_deciding_the_search_reads_the_leading_suspects_neighbourhoods(case: IncidentCase) -> None:
    from rca.search.events import ActionTaken
    from rca.topology import neighbours

    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]

    def unread(engine: SearchEngine) -> set[str]:
        events = asyncio.run(_events(engine, case.incident))
        read = {
            e.action.rsplit(" of ", 1)[-1]
            for e in events
            if isinstance(e, ActionTaken) and e.action.startswith("query logs")
        }
        finished = events[-1]
        assert isinstance(finished, Finished)
        top = [h["service"] for h in finished.trace["hypothesis_set"]["hypotheses"][:3]]
        return {n for s in top for n in (s, *neighbours(graph, s))} - read

    checking = build_engine("lats")
    assert isinstance(checking, SearchEngine)
    not_checking = build_engine("lats", ablation="check")
    assert isinstance(not_checking, SearchEngine)
    assert unread(not_checking)  # the tree alone leaves some of them unread
    assert not unread(checking)


def test_before_deciding_the_search_reads_the_symptom_the_suspects_are_weighed_against(case: IncidentCase) -> None:
    from rca.search.events import ActionTaken

    events = asyncio.run(_events(build_engine("lats"), case.incident))  # type: ignore[arg-type]
    actions = [e.action for e in events if isinstance(e, ActionTaken)]
    assert f"query metrics of {case.incident.symptom}" in actions


def test_before_deciding_the_search_examines_what_each_of_its_scans_flagged_first(case: IncidentCase) -> None:
    from rca.evidence.toolbox import SCAN_LEADS, Toolbox

    trace = from_json(asyncio.run(build_engine("lats").investigate(case.incident)).trace)  # type: ignore[arg-type]
    box = Toolbox(case.incident)
    flagged = {lead for m in ("metrics", "logs", "traces") for lead in asyncio.run(box.scan(m)).leads[:SCAN_LEADS]}
    assert flagged and flagged <= trace.evidence_package.examined


def test_a_rule_switched_off_is_off_in_the_scans_that_choose_what_the_search_reads_too(case: IncidentCase) -> None:
    from rca.evidence.toolbox import SCAN_LEADS, Toolbox
    from rca.rules.config import ScoringConfig

    def flagged(scoring: ScoringConfig) -> set[str]:
        box = Toolbox(case.incident, scoring=scoring)
        return {lead for m in ("metrics", "logs", "traces") for lead in asyncio.run(box.scan(m)).leads[:SCAN_LEADS]}

    without = flagged(ScoringConfig(off=frozenset({"timing"})))
    assert without - flagged(ScoringConfig())  # the switch changes what a scan flags first here
    ablated = build_engine("lats", ablation="rule:timing")
    trace = from_json(asyncio.run(ablated.investigate(case.incident)).trace)  # type: ignore[arg-type]
    assert without <= trace.evidence_package.examined


def test_an_endpoint_suspect_is_checked_against_its_callers_other_callees() -> None:
    import networkx as nx

    from rca.search.supervisor import _checked_around

    # front calls lb (an endpoint seen only from front's side) and api, which calls db
    graph = nx.DiGraph([("front", "lb"), ("front", "api"), ("api", "db"), ("edge", "front")])
    assert _checked_around(graph, "lb") == {"front", "api"}  # its caller, and the sibling it may stand for
    assert _checked_around(graph, "api") == {"front", "db"}  # a service that calls on: its neighbours
    assert _checked_around(graph, "unknown") == set()


def _renamed_petshop(src: Path, dst: Path) -> dict[str, str]:
    """A copy of a PetShop tree whose every component has an opaque name; returns the map."""
    names: dict[str, str] = {}

    def rename(name: str) -> str:
        return names.setdefault(name, "n" + hashlib.sha1(name.encode()).hexdigest()[:8])

    for graph_file in src.rglob("graph.csv"):
        rows = list(csv.reader(graph_file.open()))
        rows[0][1:] = [rename(n) for n in rows[0][1:]]
        for row in rows[1:]:
            row[0] = rename(row[0])
        out = dst / graph_file.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as f:
            csv.writer(f).writerows(rows)
    for metrics in src.rglob("metrics.csv"):
        rows = list(csv.reader(metrics.open()))
        rows[0][1:] = [rename(n) for n in rows[0][1:]]  # the component header row
        out = dst / metrics.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as f:
            csv.writer(f).writerows(rows)
        if (target := metrics.parent / "target.json").is_file():
            doc = json.loads(target.read_text())
            doc["target"]["node"] = rename(doc["target"]["node"])
            doc["root_cause"]["node"] = rename(doc["root_cause"]["node"])
            (out.parent / "target.json").write_text(json.dumps(doc))
    return names


@pytest.mark.parametrize("where", ["slice", "shared"])
def test_no_name_matters(where: str, petshop_slice: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Every component renamed to an opaque name, the engine finds the same culprits with the
    same values: nothing in it keys on a service's name (the datasets' or anyone's)."""
    src = petshop_slice if where == "slice" else request.getfixturevalue("shared_datasets") / "petshop"
    names = _renamed_petshop(src, tmp_path)
    renamed = {c.id.split("/", 1)[1]: c for c in find_cases(tmp_path)}
    originals = {c.id.split("/", 1)[1]: c for c in find_cases(src)}
    assert renamed.keys() == originals.keys() and originals

    async def top(case: IncidentCase) -> list[tuple[str, float]]:
        ranking = (await build_engine("lats").investigate(case.incident)).ranking
        return [(c.service, c.score) for c in ranking[:3]]

    for key, case in originals.items():
        assert renamed[key].label.service == names[case.label.service]
        before = asyncio.run(top(case))
        after = asyncio.run(top(renamed[key]))
        assert after[0] == (names[before[0][0]], before[0][1]), key
        assert [v for _, v in after] == [v for _, v in before], key


def test_every_rule_can_be_switched_off_and_says_its_principle(case: IncidentCase) -> None:
    """Each scoring rule has a one-sentence principle and an ablation switch; switched off, the
    engine still ranks (and a rule that is not there is a clear error)."""
    from rca.errors import InputError
    from rca.rules import RULES

    for rule in RULES:
        assert rule.principle.endswith(".") and "\n" not in rule.principle
        engine = build_engine("lats", ablation=f"rule:{rule.name}")
        assert engine.name == f"lats-no-rule:{rule.name}"
        assert asyncio.run(engine.investigate(case.incident)).ranking
    with pytest.raises(InputError, match="unknown rule"):
        build_engine("lats", ablation="rule:astrology")


def test_changes_survive_the_round_trip_and_the_replay_and_a_bystander_s_move_nothing(case: IncidentCase) -> None:
    from rca.changes import Change, ChangeKind
    from rca.trace_json import schema

    plain = asyncio.run(build_engine("lats").investigate(case.incident))
    graph = asyncio.run(case.incident.sources.topology.topology())  # type: ignore[union-attr]
    evidenced = {e["entity"] for e in plain.trace["evidence_package"]["evidence"]}  # type: ignore[index]
    quiet = sorted(n for n in graph if n not in evidenced)[0]
    window = case.incident.window
    changes = (
        Change(quiet, ChangeKind.DEPLOY, window.start + 10, before="1.0", after="1.1", who="ci", source="marker"),
        Change(quiet, ChangeKind.CONFIG, window.start - 30, source="marker"),
    )
    diagnosis = asyncio.run(build_engine("lats").investigate(replace(case.incident, changes=changes)))
    doc = diagnosis.trace
    assert doc is not None and [c["service"] for c in doc["evidence_package"]["changes"]] == [quiet, quiet]
    jsonschema.validate(json.loads(json.dumps(doc)), schema())
    trace = from_json(json.loads(json.dumps(doc)))
    assert trace.evidence_package.changes == changes
    assert to_json(replay(trace, graph=graph, start="hypothesis_set")) == doc
    assert diagnosis.ranking == plain.ranking  # a change with no anomaly after it explains nothing


# -- asked late: the window opened back ----------------------------------------------------
LAB_SLICE = Path(__file__).resolve().parents[2] / "data" / "lab-0"


def _metric_shift(profile: list[tuple[float, float]], *, direction: int = 1) -> MetricShift:
    run = [t for t, z in profile if direction * z >= 3.0]
    return MetricShift(
        "front", "latency_seconds", "", Signal.LATENCY, max(abs(z) for _, z in profile), run[0] if run else None,
        direction, 0.1, 1.0, tuple(profile), None, bool(run) and run[0] == profile[0][0],
    )  # fmt: skip


def test_a_symptom_degraded_from_the_window_s_first_sample_and_never_begun_inside_it_was_asked_about_late() -> None:
    window = Window(0.0, 900.0)
    degraded = _metric_shift([(float(t), 20.0) for t in range(0, 900, 60)])
    assert opened_late([degraded], window)
    begun = _metric_shift([(float(t), 0.0 if t < 300 else 20.0) for t in range(0, 900, 60)])
    assert not opened_late([begun], window)  # it began inside: the window holds its start
    assert not opened_late([degraded, begun], window)
    assert not opened_late([_metric_shift([(float(t), -20.0) for t in range(0, 900, 60)], direction=-1)], window)
    # a recording that began inside the window cannot say the incident began before it
    assert not opened_late([_metric_shift([(float(t), 20.0) for t in range(420, 900, 60)])], window)
    assert not opened_late([], window)
    assert opened_back(window) == Window(-900.0, 900.0)


def _investigated(incident: Incident, config: SearchConfig = VARIANTS["lats"].config) -> dict:  # type: ignore[type-arg]
    return asyncio.run(SearchEngine(Variant("lats", VARIANTS["lats"].order, config)).investigate(incident)).trace


def test_asked_late_the_investigation_is_the_one_of_the_window_opened_back_and_says_so() -> None:
    """A lab incident asked late, its symptom degraded when the window opened: the investigation
    reads the window opened back by its own length, exactly as if that had been asked, and says
    why; with the switch off it reads the window asked."""
    case = next(c for c in find_cases(LAB_SLICE) if c.id.endswith("20:51:16"))
    late = asyncio.run(Protocol(Placement.LATE).place(case))
    trace = _investigated(late)
    wider = opened_back(late.window)
    assert trace["evidence_package"]["window"] == {"start": to_iso(wider.start), "end": to_iso(wider.end)}
    (note,) = [m for m in trace["evidence_package"]["missing"] if m.startswith("asked late")]
    assert to_iso(late.window.start) in note and to_iso(wider.start) in note
    asked_wider = _investigated(with_window(late, wider))
    assert not any(m.startswith("asked late") for m in asked_wider["evidence_package"]["missing"])
    assert trace["decision_report"] == asked_wider["decision_report"]
    off = _investigated(late, ablate(VARIANTS["lats"].config, REOPEN))
    assert off["evidence_package"]["window"]["start"] == to_iso(late.window.start)
    assert not any(m.startswith("asked late") for m in off["evidence_package"]["missing"])
