"""The analysis stage states only the causal links its telemetry supports, and the decision
reads it: a chain the analysis holds broken does not lead the ranking."""

from dataclasses import replace

import jsonschema
import networkx as nx

from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.hypotheses import Hypothesis, HypothesisId
from rca.model import FaultType, Modality
from rca.signals import Signal
from rca.telemetry import Window
from rca.trace import EvidencePackage, Trace, analysis_structure, decision_report, replay
from rca.trace_json import schema


def _ev(i: int, entity: str, onset: float | None) -> Evidence:
    return Evidence(
        EvidenceId(f"ev-{i}"),
        Modality.METRICS,
        EvidenceKind.METRIC_SHIFT,
        entity,
        "cpu",
        9.0,
        Signal.CPU,
        "q",
        "d",
        onset,
    )


def _chain(evidence: list[Evidence]) -> list[tuple[str, str]]:
    graph = nx.DiGraph([("front", "api"), ("api", "db")])  # caller -> callee
    ep = EvidencePackage(Window(0, 600), {"metrics": True}, ("front", "api", "db"), tuple(evidence), (), {})
    h = Hypothesis(HypothesisId("h-1"), "db", FaultType.CPU, 0.9, (EvidenceId("ev-1"),), "")
    (chain,) = analysis_structure(ep, (h,), graph=graph, symptom="front")
    return [(ln.source, ln.target) for ln in chain.links]


def test_every_supported_step_in_order_is_a_link() -> None:
    assert _chain([_ev(1, "db", 100), _ev(2, "api", 150), _ev(3, "front", 160)]) == [("db", "api"), ("api", "front")]


def test_a_callee_without_evidence_is_no_cause() -> None:
    assert _chain([_ev(1, "db", 100), _ev(3, "front", 160)]) == [("db", "api")]


def test_a_cause_that_starts_after_its_effect_is_no_link() -> None:
    assert _chain([_ev(1, "db", 400), _ev(2, "api", 100), _ev(3, "front", 160)]) == [("api", "front")]
    assert _chain([_ev(1, "db", 130), _ev(2, "api", 100)]) == [("db", "api"), ("api", "front")]  # within a minute


def test_the_bundled_trace_schema_is_itself_valid() -> None:
    """Traces are validated against a compiled schema that is not re-checked at run time."""
    doc = schema()
    jsonschema.validators.validator_for(doc).check_schema(doc)


def test_every_kind_of_evidence_the_engine_finds_is_one_the_trace_schema_takes() -> None:
    """A trace is validated before it is audited or replayed: a kind the schema does not list
    would leave every trace that cites it unaudited."""
    kinds = schema()["$defs"]["evidence"]["properties"]["kind"]["enum"]
    assert {k.value for k in EvidenceKind} == set(kinds)


GRAPH = nx.DiGraph([("front", "api"), ("api", "db"), ("front", "cache")])


def _trace() -> Trace:
    evidence = (_ev(1, "db", 100), _ev(2, "api", 150), _ev(3, "front", 160), _ev(4, "cache", 120))
    ep = EvidencePackage(Window(0, 600), {"metrics": True}, ("front", "api", "db", "cache"), evidence, (), {})
    hyps = (
        Hypothesis(HypothesisId("h-1"), "db", FaultType.CPU, 0.9, (EvidenceId("ev-1"),), ""),
        Hypothesis(HypothesisId("h-2"), "cache", FaultType.CPU, 0.5, (EvidenceId("ev-4"),), ""),
    )
    chains = analysis_structure(ep, hyps, graph=GRAPH, symptom="front")
    decision = decision_report(ep, hyps, chains, graph=GRAPH, symptom="front")
    return Trace("i", "front", "lats", ep, hyps, chains, decision)


def _top(t: Trace) -> str:
    return t.decision.ranking[0][0]


def test_a_sound_analysis_leaves_the_ranking_by_value() -> None:
    assert [r[0] for r in _trace().decision.ranking] == ["db", "cache"]


def test_a_broken_chain_for_the_leader_changes_the_decision_and_its_replay_restores_it() -> None:
    """An error written into the analysis reaches the answer (so that an audit of the analysis
    has something to catch), and rebuilding the analysis from the evidence undoes it."""
    t = _trace()
    first, *rest = t.chains
    breaks = {
        "effect before cause": replace(first.links[0], onset_source=500.0),
        "no call": replace(first.links[0], target="cache"),
        "no evidence of the cause": replace(first.links[0], evidence=(EvidenceId("ev-3"),)),
    }
    for why, bad in breaks.items():
        broken = replace(t, chains=(replace(first, links=(bad, *first.links[1:])), *rest))
        wrong = replay(broken, graph=GRAPH, start="decision_report")
        assert _top(wrong) == "cache", why
        assert _top(replay(wrong, graph=GRAPH, start="analysis_structure")) == "db", why
