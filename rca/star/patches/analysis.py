"""S3 patches: prune links that are not calls, restore cause before effect, require evidence
for every link."""

from __future__ import annotations

from dataclasses import replace

from rca.star.patches import Patch, RepairContext, by_violation
from rca.topology import in_causal_order
from rca.trace import Trace, analysis_structure

STAGE = "analysis_structure"


async def prune_unreachable(trace: Trace, ctx: RepairContext) -> Trace:
    graph = ctx.audit.graph
    chains = tuple(
        replace(c, links=tuple(ln for ln in c.links if graph.has_edge(ln.target, ln.source))) for c in trace.chains
    )
    return replace(trace, chains=chains)


async def restore_order(trace: Trace, ctx: RepairContext) -> Trace:
    """Rebuild the chains along the call graph, then drop links whose effect precedes the cause."""
    rebuilt = analysis_structure(trace.evidence_package, trace.hypotheses, graph=ctx.audit.graph, symptom=trace.symptom)

    return replace(
        trace,
        chains=tuple(
            replace(c, links=tuple(ln for ln in c.links if in_causal_order(ln.onset_source, ln.onset_target)))
            for c in rebuilt
        ),
    )


async def require_evidence(trace: Trace, ctx: RepairContext) -> Trace:
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    chains = tuple(
        replace(
            c,
            links=tuple(ln for ln in c.links if any(i in by_id and by_id[i].entity == ln.source for i in ln.evidence)),
        )
        for c in trace.chains
    )
    return replace(trace, chains=chains)


def candidates(trace: Trace, ctx: RepairContext, violated: set[str]) -> list[Patch]:
    table = {
        "reachable": ("prune_unreachable", prune_unreachable),
        "cause_before_effect": ("restore_order", restore_order),
        "links_supported": ("require_evidence", require_evidence),
    }
    return by_violation(STAGE, table, violated)
