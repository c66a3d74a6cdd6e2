import asyncio
import os
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from rca.engines import build_engine
from rca.evaluation.faults import window_misses_onset
from rca.sources.datasets import find_cases
from rca.star.audit import Route, audit
from rca.star.context import audit_context
from rca.star.memory import InMemoryRepairMemory, Pattern, RepairRecord
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import InsufficientEvidenceException, RepairConfig, check_feasible, repair
from rca.trace import Trace
from rca.trace_json import from_json
from storage.repair_memory import SqlRepairMemory
from tests.rca.star.test_audit import VIOLATIONS, _clean


@pytest.fixture(scope="module")
def setup() -> tuple[Trace, RepairContext]:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    ctx = RepairContext(asyncio.run(audit_context(case.incident)), recollector(case.incident))
    return from_json(doc), ctx  # type: ignore[arg-type]


def _run(trace: Trace, ctx: RepairContext, cfg: RepairConfig, memory=None):  # type: ignore[no-untyped-def]
    return asyncio.run(repair(trace, ctx, cfg, memory))


def test_an_accepted_trace_is_left_untouched(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    sound = _clean(trace, ctx.audit)  # it examined what the telemetry flags most: nothing required is missing
    result = _run(sound, ctx, RepairConfig(tau=0.5, epsilon=0.1))
    assert result.trace is sound and result.replays == 0 and not result.steps


def test_fast_path_patches_the_most_severe_stage_once(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    sound = _clean(trace, ctx.audit)
    check_feasible(sound, ctx.audit.graph)
    broken = replace(sound, decision=replace(sound.decision, confidence=0.99))
    verdict = audit(broken, ctx.audit)
    cfg = RepairConfig(tau=verdict.score + 0.05, epsilon=0.1)
    result = _run(broken, ctx, cfg)
    first = result.steps[0]
    assert first.route == "fast_path" and first.stage == verdict.blamed.stage  # type: ignore[union-attr]
    assert result.after.score >= result.before.score


def test_a_fast_patch_that_only_replays_is_not_credited(setup: tuple[Trace, RepairContext]) -> None:
    """The evidence stage is the most severe, but with no way to read the telemetry again its
    patch helps only through the replay that follows it, which repairs the chain just as well
    without it: the defect is the analysis."""
    trace, ctx = setup
    ctx = replace(ctx, recollect=None)
    sound = VIOLATIONS["leads_examined"](VIOLATIONS["onset_covered"](_clean(trace, ctx.audit), ctx.audit), ctx.audit)
    ep = sound.evidence_package
    gap = replace(ep, modalities={**ep.modalities, "traces": False}, missing=("traces: unavailable (timeout)",))
    chain = sound.chains[0]
    unsupported = replace(chain, links=tuple(replace(ln, evidence=()) for ln in chain.links))
    broken = replace(sound, evidence_package=gap, chains=(unsupported,))
    verdict = audit(broken, ctx.audit)
    assert verdict.blamed is not None and verdict.blamed.stage == "evidence_package"
    result = _run(broken, ctx, RepairConfig(tau=verdict.score + 0.02, epsilon=0.1, rounds=2))
    assert result.steps[0].route == "fast_path" and not result.steps[0].committed
    assert result.decisive_stage == "analysis_structure"


def test_a_window_opened_after_the_onset_is_widened_back(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    good = _run(trace, ctx, RepairConfig(tau=0.99, epsilon=0.0)).trace
    late = asyncio.run(window_misses_onset(good, ctx))
    assert late is not None and late.evidence_package.window.start > good.evidence_package.window.start
    result = _run(late, ctx, RepairConfig(tau=audit(good, ctx.audit).score - 1e-6, epsilon=0.01))
    assert result.decisive_stage == "evidence_package"
    assert result.trace.evidence_package.window.start < late.evidence_package.window.start, result.steps
    assert result.after.score > result.before.score


def test_slow_path_finds_the_decisive_stage_by_replay(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    broken = replace(
        trace, chains=tuple(replace(c, links=tuple(replace(ln, evidence=()) for ln in c.links)) for c in trace.chains)
    )
    result = _run(broken, ctx, RepairConfig(tau=0.99, epsilon=0.01, rounds=1))
    assert result.steps and result.steps[0].route == "slow_path"
    assert result.decisive_stage in ("evidence_package", "analysis_structure")
    assert result.after.score > result.before.score


def test_no_sound_chain_rolls_back_to_evidence(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    # a trace whose one defect is that no chain links its hypotheses to the symptom
    sound = _clean(trace, ctx.audit)
    orphan = replace(sound, chains=tuple(replace(c, links=()) for c in sound.chains))
    with pytest.raises(InsufficientEvidenceException):
        check_feasible(orphan, ctx.audit.graph)
    # a call graph that knows the services but none of their calls: no analysis can chain them
    isolated = nx.DiGraph()
    isolated.add_nodes_from(ctx.audit.graph.nodes)
    blind = replace(ctx, audit=replace(ctx.audit, graph=isolated))
    result = _run(orphan, blind, RepairConfig(tau=0.99, epsilon=0.0, rounds=1))
    # no stage's patch finds a chain where none can exist, so the repair falls back to S1
    assert result.rolled_back and result.replays >= 1
    assert result.steps and result.steps[-1].stage == "evidence_package"


def test_budget_spent_gives_a_verification_first_report(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    result = _run(trace, ctx, RepairConfig(tau=1.01, epsilon=0.0, rounds=1))
    assert result.verification_first
    assert result.trace.decision.tests


def test_memory_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    record = RepairRecord(Pattern("cpu", "logs+metrics+traces", 2, 3), "analysis_structure", "require_evidence", 0.12)
    mem = SqlRepairMemory(path)
    mem.remember(record)
    mem.remember(replace(record, pattern=Pattern("exception", "logs", 1, 1)))
    mem.close()
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    again = SqlRepairMemory(path)
    assert list(again.similar(Pattern("cpu", "logs+metrics+traces", 3, 3))) == [record]
    assert list(again.similar(Pattern("memory", "metrics", 3, 3))) == []
    again.close()


def test_memory_reduces_replays_on_a_recurring_pattern(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    broken = replace(
        trace, chains=tuple(replace(c, links=tuple(replace(ln, evidence=()) for ln in c.links)) for c in trace.chains)
    )
    cfg = RepairConfig(tau=0.99, epsilon=0.01, rounds=1)
    memory = InMemoryRepairMemory()
    first = _run(broken, ctx, cfg, memory)
    assert memory.records, "a successful repair is remembered"
    second = _run(broken, ctx, cfg, memory)
    assert second.decisive_stage == first.decisive_stage
    assert second.replays < first.replays


def test_a_model_critic_orders_the_candidates(setup: tuple[Trace, RepairContext]) -> None:
    trace, ctx = setup
    broken = replace(
        trace, chains=tuple(replace(c, links=tuple(replace(ln, evidence=()) for ln in c.links)) for c in trace.chains)
    )
    asked: list[list[str]] = []
    applied: list[str] = []

    def recorded(patch):  # type: ignore[no-untyped-def]
        async def apply(t, c):  # type: ignore[no-untyped-def]
            applied.append(patch.name)
            return await patch.apply(t, c)

        return replace(patch, apply=apply)

    async def reversing(stage, verdict, menu, k):  # type: ignore[no-untyped-def]
        asked.append([p.name for p in menu])
        return [recorded(p) for p in reversed(menu)]

    _run(broken, replace(ctx, critic=reversing), RepairConfig(tau=0.99, epsilon=0.01, rounds=1, k=1))
    assert asked and all(len(menu) > 1 for menu in asked)  # consulted with the whole menu
    assert applied == [menu[-1] for menu in asked]  # with k=1, only the critic's pick was tried


def test_a_modality_left_unread_is_read_first(setup: tuple[Trace, RepairContext]) -> None:
    from rca.evaluation.faults import modality_dropped
    from rca.star.patches.package import candidates

    trace, ctx = setup
    dropped = asyncio.run(modality_dropped(trace, ctx))
    assert dropped is not None
    verdict = audit(dropped, ctx.audit)
    short = {c.name for c in verdict.criteria if c.stage == "evidence_package" and c.score < 1.0}
    assert "sources_read" in short
    # among every S1 shortfall, re-reading the unread modality comes first, so K=4 keeps it
    menu = [p.name for p in candidates(dropped, ctx, short | {"onset_covered", "leads_examined", "scope_neighbours"})]
    assert menu[0] == "rebalance_modalities" and menu.count("rebalance_modalities") == 1
    repaired = _run(dropped, ctx, RepairConfig(tau=audit(trace, ctx.audit).score - 1e-6, epsilon=0.01))
    assert repaired.decisive_stage == "evidence_package"


def test_a_violated_requirement_is_patched_first(setup: tuple[Trace, RepairContext]) -> None:
    """Leads never examined is a requirement: however the other shortfalls of the evidence
    stage rank in its critic's own order, the fast path's one patch is the one that reads them."""
    from rca.star.repair import critic

    trace, ctx = setup
    broken = VIOLATIONS["leads_examined"](VIOLATIONS["onset_covered"](_clean(trace, ctx.audit), ctx.audit), ctx.audit)
    verdict = audit(broken, ctx.audit)
    shortfalls = {c.name for c in verdict.criteria if c.stage == "evidence_package" and c.score < 1.0}
    assert {"onset_covered", "leads_examined"} <= shortfalls  # the critic's own order puts the window first
    assert [p.name for p in critic("evidence_package", broken, ctx, verdict, 4)][0] == "examine_leads"
    soft = replace(verdict, criteria=tuple(replace(c, necessary=False) for c in verdict.criteria))
    assert [p.name for p in critic("evidence_package", broken, ctx, soft, 4)][0] == "widen_window"


def test_a_leader_with_no_anomaly_of_this_incident_is_ranked_again_on_the_fast_path(
    setup: tuple[Trace, RepairContext],
) -> None:
    """The requirement's stage is patched, whatever stage is most severe: the leader's service
    is read again, then the hypotheses are ranked again by the evidence."""
    from tests.rca.star.test_audit import _all_over, _contradicting, _overconfident, _useless_tests

    trace, ctx = setup
    broken = _all_over(_clean(trace, ctx.audit))
    for spoil in (_overconfident, _contradicting, _useless_tests):  # the report is the most severe stage
        broken = spoil(broken, ctx.audit)
    verdict = audit(broken, ctx.audit)
    assert verdict.route is not Route.ACCEPT and verdict.blamed is not None
    assert verdict.blamed.stage == "decision_report"
    result = _run(broken, ctx, RepairConfig(rounds=1))
    assert result.steps and result.steps[0].stage == "hypothesis_set" and result.steps[0].patch == "rescore"
    # read again, the leader's telemetry shows this incident's anomaly (its evidence was only
    # made to look over): it keeps its place, and the requirement holds
    lead = next(c for c in result.after.criteria if c.name == "independent_lead")
    assert result.trace.hypotheses[0].service == broken.hypotheses[0].service and not lead.necessary
    # with nothing to read again, the ranking by the evidence it has puts the rival first
    unread = _run(broken, replace(ctx, recollect=None), RepairConfig(rounds=1))
    assert unread.steps[0].patch == "rescore" and unread.trace.hypotheses[0].service != broken.hypotheses[0].service
