"""Reasoning faults injected into good traces, one family per stage, for STAR's evaluation.

Each injection corrupts one stage as a faulty agent would and lets the downstream stages be
rebuilt from it (they are coherently wrong). Nothing marks the trace: the audit must find
the fault from the trace and the telemetry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from rca.evidence import EvidenceId
from rca.star.patches import RepairContext
from rca.topology import neighbours
from rca.trace import Link, Trace, VerificationTest, replay


@dataclass(frozen=True, slots=True)
class Injection:
    stage: str
    name: str
    inject: Callable[[Trace, RepairContext], Awaitable[Trace | None]]  # None: does not apply


async def _rebuild(trace: Trace, ctx: RepairContext, start: str) -> Trace:
    return replay(trace, graph=ctx.audit.graph, start=start)


async def window_misses_onset(t: Trace, ctx: RepairContext) -> Trace | None:
    ep = t.evidence_package
    cited = {i for h in t.hypotheses[:1] for i in h.evidence}
    onsets = [ev.onset for ev in ep.evidence if ev.id in cited and ev.onset is not None]
    if not onsets or ctx.recollect is None:
        return None
    late = min(onsets) + 60.0
    if late >= ep.window.end - 60:
        return None
    cut = replace(t, evidence_package=replace(ep, window=replace(ep.window, start=late)))
    return await _rebuild(await ctx.recollect(cut, tuple(ep.scope), 0.0), ctx, "hypothesis_set")


async def modality_dropped(t: Trace, ctx: RepairContext) -> Trace | None:
    ep = t.evidence_package
    top = t.hypotheses[0]
    mods = [ev.modality.value for ev in ep.evidence if ev.entity == top.service]
    if not mods:
        return None
    drop = max(sorted(set(mods)), key=mods.count)  # ties broken by name, not by hash order
    kept = tuple(ev for ev in ep.evidence if ev.modality.value != drop)
    broken = replace(ep, evidence=kept, modalities={**ep.modalities, drop: False})
    return await _rebuild(replace(t, evidence_package=broken), ctx, "hypothesis_set")


async def scope_only_victims(t: Trace, ctx: RepairContext) -> Trace | None:
    ep = t.evidence_package
    top = t.hypotheses[0].service
    hood = neighbours(ctx.audit.graph, top) | {top}
    kept = tuple(ev for ev in ep.evidence if ev.entity not in hood)
    if len(kept) == len(ep.evidence):
        return None
    scope = tuple(e for e in ep.scope if e not in hood)
    return await _rebuild(replace(t, evidence_package=replace(ep, evidence=kept, scope=scope)), ctx, "hypothesis_set")


async def true_hypothesis_removed(t: Trace, ctx: RepairContext) -> Trace | None:
    if len(t.hypotheses) < 2:
        return None
    return await _rebuild(replace(t, hypotheses=t.hypotheses[1:]), ctx, "analysis_structure")


async def anchored(t: Trace, ctx: RepairContext) -> Trace | None:
    if len(t.hypotheses) < 2:
        return None
    return await _rebuild(replace(t, hypotheses=t.hypotheses[1:2]), ctx, "analysis_structure")


async def unreachable_edge(t: Trace, ctx: RepairContext) -> Trace | None:
    if not t.chains:
        return None
    graph = ctx.audit.graph
    chain = t.chains[0]
    strangers = sorted(n for n in graph.nodes if n != chain.root and not graph.has_edge(n, chain.root))
    if not strangers:
        return None
    cite = t.hypotheses[0].evidence[:1]
    fake = Link(f"{chain.hypothesis}-lx", chain.root, strangers[0], None, None, tuple(EvidenceId(i) for i in cite))
    return await _rebuild(
        replace(t, chains=(replace(chain, links=(fake,) + chain.links),) + t.chains[1:]), ctx, "decision_report"
    )


async def reversed_order(t: Trace, ctx: RepairContext) -> Trace | None:
    links = [ln for c in t.chains for ln in c.links]
    if not links:
        return None
    base = t.evidence_package.window.start
    chains = tuple(
        replace(c, links=tuple(replace(ln, onset_source=base + 600.0, onset_target=base + 60.0) for ln in c.links))
        for c in t.chains
    )
    return await _rebuild(replace(t, chains=chains), ctx, "decision_report")


async def unsupported_link(t: Trace, ctx: RepairContext) -> Trace | None:
    if not any(c.links for c in t.chains):
        return None
    chains = tuple(replace(c, links=tuple(replace(ln, evidence=()) for ln in c.links)) for c in t.chains)
    return await _rebuild(replace(t, chains=chains), ctx, "decision_report")


async def overconfident(t: Trace, ctx: RepairContext) -> Trace | None:
    return replace(t, decision=replace(t.decision, confidence=0.99))


async def ranking_contradicts(t: Trace, ctx: RepairContext) -> Trace | None:
    r = t.decision.ranking
    if len(r) < 3:
        return None
    return replace(t, decision=replace(t.decision, ranking=(r[2], r[1], r[0]) + r[3:]))


async def tests_not_discriminative(t: Trace, ctx: RepairContext) -> Trace | None:
    if not t.hypotheses:
        return None
    h = t.hypotheses[0]
    others = sorted(set(ctx.audit.graph.nodes) - {x.service for x in t.hypotheses})
    if not others:
        return None
    test = VerificationTest(
        "t-1",
        h.id,
        "logs",
        others[0],
        f"logs{{entity={others[0]}}}",
        "anything",
        ((h.id, "anomalous"),),
        "a test that separates nothing",
    )
    return replace(t, decision=replace(t.decision, tests=(test,)))


INJECTIONS: tuple[Injection, ...] = (
    Injection("evidence_package", "window_misses_onset", window_misses_onset),
    Injection("evidence_package", "modality_dropped", modality_dropped),
    Injection("evidence_package", "scope_only_victims", scope_only_victims),
    Injection("hypothesis_set", "true_hypothesis_removed", true_hypothesis_removed),
    Injection("hypothesis_set", "anchored", anchored),
    Injection("analysis_structure", "unreachable_edge", unreachable_edge),
    Injection("analysis_structure", "reversed_order", reversed_order),
    Injection("analysis_structure", "unsupported_link", unsupported_link),
    Injection("decision_report", "overconfident", overconfident),
    Injection("decision_report", "ranking_contradicts", ranking_contradicts),
    Injection("decision_report", "tests_not_discriminative", tests_not_discriminative),
)
