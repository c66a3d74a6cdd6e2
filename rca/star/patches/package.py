"""S1 patches: recollect evidence with a wider window, a wider scope, more modalities, or
sources re-aligned to the window."""

from __future__ import annotations

from dataclasses import replace

from rca.star.package import onset_covered
from rca.star.patches import Patch, RepairContext
from rca.topology import neighbours
from rca.trace import Trace

STAGE = "evidence_package"


def _suspects(trace: Trace, k: int = 3) -> list[str]:
    return [h.service for h in trace.hypotheses[:k]]


async def widen_window(trace: Trace, ctx: RepairContext) -> Trace:
    """Start the window earlier (by half its length) to recover the onset."""
    if ctx.recollect is None:
        return trace
    return await ctx.recollect(trace, tuple(trace.evidence_package.scope), 0.5)


async def recover_onset(trace: Trace, ctx: RepairContext) -> Trace:
    """Double the window backwards until the leading anomalies begin inside it (at most three
    times): a window cut short can start minutes after the change."""
    if ctx.recollect is None:
        return trace
    for _ in range(3):
        trace = await ctx.recollect(trace, tuple(trace.evidence_package.scope), 1.0)
        if onset_covered(ctx.replay(trace, "hypothesis_set")).score >= 1.0:
            break
    return trace


async def expand_neighbours(trace: Trace, ctx: RepairContext) -> Trace:
    """Read the callers and callees of the leading suspects too, until the leaders' whole
    neighbourhood is in scope (new evidence can bring new leaders; at most three rounds)."""
    if ctx.recollect is None:
        return trace
    for _ in range(3):
        leaders = [h.service for h in ctx.hypotheses(trace.evidence_package, trace.symptom)[:3]]
        hood = {n for s in leaders for n in neighbours(ctx.audit.graph, s)} | set(leaders)
        missing = hood - set(trace.evidence_package.scope)
        if not missing:
            break
        trace = await ctx.recollect(trace, tuple(sorted(set(trace.evidence_package.scope) | hood)), 0.0)
    return trace


async def examine_leads(trace: Trace, ctx: RepairContext) -> Trace:
    """Read the entities the telemetry flags most, then the neighbourhood of the leaders."""
    if ctx.recollect is None:
        return trace
    seen = trace.evidence_package.examined
    unseen = tuple(e for e in ctx.audit.leads if e not in seen)
    if unseen:
        trace = await ctx.recollect(trace, unseen, 0.0)
    return await expand_neighbours(trace, ctx)


async def rebalance_modalities(trace: Trace, ctx: RepairContext) -> Trace:
    """Read every available modality of the leading suspects."""
    if ctx.recollect is None:
        return trace
    ep = trace.evidence_package
    modalities = {**ep.modalities, **{m: ok for m, ok in ctx.audit.modalities_available.items() if ok}}
    trace = replace(trace, evidence_package=replace(ep, modalities=modalities))
    return await ctx.recollect(trace, tuple(sorted(set(ep.scope) | set(_suspects(trace)))), 0.0)


async def realign_sources(trace: Trace, ctx: RepairContext) -> Trace:
    """Drop evidence whose onset falls outside the window (a clock or source misaligned)."""
    ep = trace.evidence_package
    kept = tuple(ev for ev in ep.evidence if ev.onset is None or ep.window.start <= ev.onset < ep.window.end)
    return replace(trace, evidence_package=replace(ep, evidence=kept))


def candidates(trace: Trace, ctx: RepairContext, violated: set[str]) -> list[Patch]:
    order = []
    if "sources_read" in violated:  # a modality left unread: read it (the one direct fix)
        order.append(Patch(STAGE, "rebalance_modalities", rebalance_modalities))
    if "onset_covered" in violated:
        order.append(Patch(STAGE, "widen_window", widen_window))
        order.append(Patch(STAGE, "recover_onset", recover_onset))
    if "modality_fit" in violated and "sources_read" not in violated:
        order.append(Patch(STAGE, "rebalance_modalities", rebalance_modalities))
    if "leads_examined" in violated:
        order.append(Patch(STAGE, "examine_leads", examine_leads))
    if "scope_neighbours" in violated:
        order.append(Patch(STAGE, "expand_neighbours", expand_neighbours))
    order.append(Patch(STAGE, "realign_sources", realign_sources))
    for name, fn in (
        ("expand_neighbours", expand_neighbours),
        ("rebalance_modalities", rebalance_modalities),
        ("widen_window", widen_window),
        ("recover_onset", recover_onset),
    ):
        if all(p.name != name for p in order):
            order.append(Patch(STAGE, name, fn))
    return order
