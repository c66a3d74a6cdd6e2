"""The honest STAR evaluation's rewrites and reasoning errors, on a real trace."""

from __future__ import annotations

import asyncio

import networkx as nx
import pytest

from rca.engines import build_engine
from rca.evaluation.metrics import separation as auroc
from rca.evaluation.reasoning_errors import FAMILIES, nudged_confidence, renamed_ids, thin_evidence, victim_made_root
from rca.evaluation.star_honest import content
from rca.sources.datasets import find_cases
from rca.star.audit import audit
from rca.star.context import audit_context
from rca.star.criteria import AuditContext
from rca.trace import Trace
from rca.trace_json import from_json, to_json


@pytest.fixture(scope="module")
def real() -> tuple[Trace, AuditContext]:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    return from_json(dict(doc)), asyncio.run(audit_context(case.incident))  # type: ignore[arg-type]


def test_renamed_ids_are_a_harmless_rewrite_the_audit_scores_the_same(real: tuple[Trace, AuditContext]) -> None:
    trace, ctx = real
    renamed = renamed_ids(trace)
    assert [ev.id for ev in renamed.evidence_package.evidence] != [ev.id for ev in trace.evidence_package.evidence]
    before, after = audit(trace, ctx), audit(renamed, ctx)
    assert (after.score, after.trust, after.route) == (before.score, before.trust, before.route)
    to_json(renamed)  # every reference renamed with its item: the schema holds


def test_a_nudged_confidence_stays_in_the_unit_interval(real: tuple[Trace, AuditContext]) -> None:
    trace, _ = real
    for by in (-2.0, -0.05, 0.05, 2.0):
        conf = nudged_confidence(trace, by).decision.confidence
        assert 0.0 <= conf <= 1.0 and conf == nudged_confidence(trace, by).decision.ranking[0][2]


def test_every_reasoning_error_is_a_coherent_trace_that_changes_something(real: tuple[Trace, AuditContext]) -> None:
    trace, ctx = real
    made = {name: fn(trace, ctx) for name, fn in FAMILIES.items()}
    assert any(t is not None for t in made.values())
    for t in made.values():
        if t is not None:
            to_json(t)  # schema-valid: nothing marks it as injected
            assert t != trace
    victim = victim_made_root(trace, ctx)
    if victim is not None:  # the new leader calls the old one: a victim of it
        assert trace.hypotheses[0].service in nx.descendants(ctx.graph, victim.hypotheses[0].service)
        assert victim.decision.ranking[0][0] == victim.hypotheses[0].service  # the decision rebuilt from it
    thin = thin_evidence(trace, ctx)
    if thin is not None:
        assert len(thin.hypotheses[0].evidence) == 1 and thin.decision == trace.decision  # confidence kept


def test_what_a_trace_says_ignores_its_ids_and_cost_and_sees_every_written_error(
    real: tuple[Trace, AuditContext],
) -> None:
    """A read budget that did not bind writes no error: such a run says what the full run
    says, and is not counted as a fault the audit missed. Every family's error is seen."""
    from dataclasses import replace

    from rca.model import Cost

    trace, ctx = real
    assert content(renamed_ids(trace)) == content(trace)
    assert content(replace(trace, cost=Cost(seconds=999.0, iterations=99))) == content(trace)
    for name, fn in FAMILIES.items():
        if (bad := fn(trace, ctx)) is not None:
            assert content(bad) != content(trace), name
    moved = nudged_confidence(trace, 0.05)
    assert content(moved) != content(trace)  # a clean rewrite is judged as clean, not by this


def test_auroc_counts_ties_half_and_orders() -> None:
    assert auroc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auroc([0.1], [0.9]) == 0.0
    assert auroc([0.5], [0.5]) == 0.5
    assert auroc([], [0.5]) is None


def test_a_fault_type_its_evidence_does_not_show_is_not_accepted_and_repair_restores_it(
    real: tuple[Trace, AuditContext],
) -> None:
    from rca.evaluation.reasoning_errors import neighbouring_fault_type
    from rca.star.audit import Route
    from rca.star.patches import RepairContext
    from rca.star.repair import RepairConfig, repair

    trace, ctx = real
    clean = audit(trace, ctx)
    assert next(c for c in clean.criteria if c.name == "type_carried").score == 1.0  # the engine's own type is shown
    retyped = neighbouring_fault_type(trace, ctx)
    assert retyped is not None
    verdict = audit(retyped, ctx)
    carried = next(c for c in verdict.criteria if c.name == "type_carried")
    assert carried.violated and verdict.route is not Route.ACCEPT
    fixed = asyncio.run(repair(retyped, RepairContext(ctx), RepairConfig(rounds=1))).trace
    assert fixed.decision.ranking[0][1] == trace.decision.ranking[0][1]


def test_the_replay_localiser_finds_the_stage_it_can_replay_within_its_allowance(
    real: tuple[Trace, AuditContext],
) -> None:
    """Walking back from the decision, the replay of the stage an error was written into is
    the first the audit accepts; with fewer replays it names only what it reached."""
    from rca.evaluation.reasoning_errors import neighbouring_fault_type
    from rca.evaluation.star_honest import replay_localise
    from rca.star.audit import Route
    from rca.star.patches import RepairContext

    trace, ctx = real
    retyped = neighbouring_fault_type(trace, ctx)
    assert retyped is not None and audit(retyped, ctx).route is not Route.ACCEPT
    repair_ctx = RepairContext(ctx)
    assert asyncio.run(replay_localise(retyped, repair_ctx, 4)) == "hypothesis_set"
    assert asyncio.run(replay_localise(retyped, repair_ctx, 1)) == "decision_report"
    assert asyncio.run(replay_localise(retyped, repair_ctx, 0)) is None


def test_another_equally_short_path_is_a_harmless_rewrite() -> None:
    """Two call paths of one length from the symptom to the cause: drawing the chain along
    the other one changes the analysis, not the answer, and the audit does not object."""
    from rca.evaluation.reasoning_errors import other_shortest_path
    from rca.evidence import Evidence, EvidenceId, EvidenceKind
    from rca.hypotheses import Hypothesis, HypothesisId
    from rca.model import FaultType, Modality
    from rca.signals import Signal
    from rca.telemetry import Window
    from rca.trace import EvidencePackage, analysis_structure, decision_report

    graph = nx.DiGraph([("front", "a"), ("front", "b"), ("a", "db"), ("b", "db")])
    evidence = tuple(
        Evidence(
            EvidenceId(f"ev-{i}"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            e,
            "cpu",
            9.0,
            Signal.CPU,
            "q",
            "d",
            onset,
        )
        for i, (e, onset) in enumerate([("db", 100.0), ("a", 150.0), ("b", 150.0), ("front", 160.0)], start=1)
    )
    ep = EvidencePackage(Window(0, 600), {"metrics": True}, ("front", "a", "b", "db"), evidence, (), {})
    hyps = (Hypothesis(HypothesisId("h-1"), "db", FaultType.CPU, 0.9, (EvidenceId("ev-1"),), ""),)
    chains = analysis_structure(ep, hyps, graph=graph, symptom="front")
    t = Trace("i", "front", "lats", ep, hyps, chains, decision_report(ep, hyps, chains, graph=graph, symptom="front"))
    detour = other_shortest_path(t, graph)
    assert detour is not None and detour.chains[0].links != t.chains[0].links
    assert len(detour.chains[0].links) == len(t.chains[0].links) and detour.decision == t.decision
    ctx = AuditContext(graph)
    assert audit(detour, ctx).score == audit(t, ctx).score


def test_independent_replays_are_reproducible_draws_within_the_spread() -> None:
    from rca.evaluation.star_honest import sampled
    from rca.rules.config import ScoringConfig

    base = ScoringConfig()
    assert sampled("case/1/clean", 0.0)() == base  # spread 0: the function that built the trace
    draws, again = sampled("case/1/clean", 0.25), sampled("case/1/clean", 0.25)
    first, second = draws(), draws()
    assert first != second != base  # each replay another sampling
    assert (first, second) == (again(), again())  # the same seed, the same draws
    assert sampled("case/2/clean", 0.25)() != first
    assert 0.75 * base.past_weight <= first.past_weight <= 1.25 * base.past_weight


def test_every_replay_of_a_repair_scores_with_the_contexts_reading(real: tuple[Trace, AuditContext]) -> None:
    """The repair replays through its context, never around it: an evaluation that hands it an
    independent sampling gets replays that are not the function that built the trace."""
    from dataclasses import replace

    from rca.evaluation.reasoning_errors import neighbouring_fault_type
    from rca.evaluation.star_honest import replay_localise
    from rca.rules.config import ScoringConfig
    from rca.star.audit import Route
    from rca.star.patches import RepairContext
    from rca.star.repair import RepairConfig, repair

    trace, ctx = real
    retyped = neighbouring_fault_type(trace, ctx)
    assert retyped is not None and audit(retyped, ctx).route is not Route.ACCEPT
    calls = 0

    def reading() -> ScoringConfig:
        nonlocal calls
        calls += 1
        return ScoringConfig()

    result = asyncio.run(repair(retyped, RepairContext(ctx, reading=reading), RepairConfig(rounds=1)))
    assert result.replays >= 1 and calls >= result.replays
    calls = 0
    asyncio.run(replay_localise(retyped, replace(RepairContext(ctx), reading=reading), 3))
    assert calls == 3
