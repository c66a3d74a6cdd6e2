"""S3, the analysis structure: paths that exist, causes before effects, links with evidence."""

from __future__ import annotations

from rca.star.criteria import AuditContext, Criterion
from rca.trace import Trace, in_order, is_call, supported

STAGE = "analysis_structure"


def check(trace: Trace, ctx: AuditContext) -> list[Criterion]:
    return [reachable(trace, ctx), cause_before_effect(trace), links_supported(trace)]


def _links(trace: Trace) -> list:
    return [ln for c in trace.chains for ln in c.links]


def reachable(trace: Trace, ctx: AuditContext) -> Criterion:
    """Every link is a call in the graph: the effect side calls the cause side."""
    links = _links(trace)
    if not links:
        return Criterion(
            STAGE,
            "reachable",
            1.0 if trace.chains else 0.0,
            1.5,
            "no links to check" if trace.chains else "no causal chain",
        )
    bad = [ln.id for ln in links if not is_call(ln, ctx.graph)]
    score = 1.0 - len(bad) / len(links)
    why = f"{len(bad)} of {len(links)} links are not calls in the topology" if bad else "every link is a call"
    return Criterion(STAGE, "reachable", score, 1.5, why, tuple(bad))


def cause_before_effect(trace: Trace) -> Criterion:
    """Along each chain the cause's anomaly does not start after its effect's."""
    timed = [ln for ln in _links(trace) if ln.onset_source is not None and ln.onset_target is not None]
    if not timed:
        return Criterion(STAGE, "cause_before_effect", 0.7, 1.0, "no link has both onsets")
    bad = [ln.id for ln in timed if not in_order(ln)]
    score = 1.0 - len(bad) / len(timed)
    why = (
        f"{len(bad)} of {len(timed)} links put the effect before the cause"
        if bad
        else "onsets respect cause before effect"
    )
    return Criterion(STAGE, "cause_before_effect", score, 1.0, why, tuple(bad))


def links_supported(trace: Trace) -> Criterion:
    """Every link cites telemetry of its cause side."""
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    links = _links(trace)
    if not links:
        return Criterion(STAGE, "links_supported", 1.0 if trace.chains else 0.0, 1.0, "no links to check")
    bad = [ln.id for ln in links if not supported(ln, by_id)]
    score = 1.0 - len(bad) / len(links)
    why = f"{len(bad)} of {len(links)} links cite no evidence of their cause" if bad else "every link is supported"
    return Criterion(STAGE, "links_supported", score, 1.0, why, tuple(bad))
