"""S2 patches: bind every hypothesis to its own evidence, add counter-hypotheses, keep host
and service apart."""

from __future__ import annotations

from dataclasses import replace

from rca.hypotheses import Hypothesis, HypothesisId
from rca.star.patches import Patch, RepairContext, by_violation
from rca.trace import Trace

STAGE = "hypothesis_set"


async def bind_evidence(trace: Trace, ctx: RepairContext) -> Trace:
    """Keep only evidence of the package about the hypothesis' own service; drop the unbound."""
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    kept = []
    for h in trace.hypotheses:
        ids = tuple(i for i in h.evidence if i in by_id and by_id[i].entity == h.service)
        if ids:
            kept.append(replace(h, evidence=ids))
    return replace(trace, hypotheses=tuple(kept))


async def add_counter_hypotheses(trace: Trace, ctx: RepairContext) -> Trace:
    """Add the explanations the evidence supports that the set left out."""
    fresh = ctx.hypotheses(trace.evidence_package, trace.symptom)
    have = {h.service for h in trace.hypotheses}
    next_id = len(trace.hypotheses) + 1
    added: list[Hypothesis] = []
    for h in fresh:
        if h.service not in have:
            added.append(replace(h, id=HypothesisId(f"h-{next_id}")))
            next_id += 1
    merged = sorted(trace.hypotheses + tuple(added), key=lambda h: -h.value)
    return replace(trace, hypotheses=tuple(merged))


async def separate_layers(trace: Trace, ctx: RepairContext) -> Trace:
    """Halve hypotheses that rest on their host's telemetry alone."""
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}

    def host_only(h: Hypothesis) -> bool:
        cited = [by_id[i] for i in h.evidence if i in by_id]
        return bool(cited) and all("[host]" in ev.detail for ev in cited)

    hyps = [replace(h, value=round(h.value * 0.5, 4)) if host_only(h) else h for h in trace.hypotheses]
    return replace(trace, hypotheses=tuple(sorted(hyps, key=lambda h: -h.value)))


async def retype(trace: Trace, ctx: RepairContext) -> Trace:
    """Read the leader's service again (a type its evidence does not show may have been read
    from too little of it), then give the leader the fault type, and the evidence, its
    service's telemetry supports best."""
    if not trace.hypotheses:
        return trace
    top = trace.hypotheses[0]
    if ctx.recollect is not None:
        trace = await ctx.recollect(trace, (top.service,), 0.0)
    fresh = ctx.hypotheses(trace.evidence_package, trace.symptom)
    mine = next((h for h in fresh if h.service == top.service), None)
    if mine is None:
        return trace
    present = {ev.id for ev in trace.evidence_package.evidence}  # a re-read replaced the leader's evidence
    rest = tuple(replace(h, evidence=tuple(i for i in h.evidence if i in present)) for h in trace.hypotheses[1:])
    return replace(trace, hypotheses=(replace(top, fault_type=mine.fault_type, evidence=mine.evidence), *rest))


async def rescore(trace: Trace, ctx: RepairContext) -> Trace:
    """Read the leader's service again (an anomaly of this incident may not have been read),
    then rank the hypotheses again by what the package's evidence supports: a leader that
    still shows no anomaly of this incident goes where its evidence puts it."""
    if trace.hypotheses and ctx.recollect is not None:
        trace = await ctx.recollect(trace, (trace.hypotheses[0].service,), 0.0)
    fresh = ctx.hypotheses(trace.evidence_package, trace.symptom)
    return replace(trace, hypotheses=tuple(fresh)) if fresh else trace


def candidates(trace: Trace, ctx: RepairContext, violated: set[str]) -> list[Patch]:
    table = {
        "grounded": ("bind_evidence", bind_evidence),
        "not_collapsed": ("add_counter_hypotheses", add_counter_hypotheses),
        "layer_consistent": ("separate_layers", separate_layers),
        "type_carried": ("retype", retype),
        "independent_lead": ("rescore", rescore),
    }
    return by_violation(STAGE, table, violated)
