"""S2, the hypothesis set: grounded, not collapsed, not blaming a service for its host."""

from __future__ import annotations

from rca.evidence.traces import NO_GAPS
from rca.hypotheses import supported_faults
from rca.star.criteria import AuditContext, Criterion
from rca.trace import Trace, hypothesis_set

STAGE = "hypothesis_set"
HOST_MARK = "[host]"


def check(trace: Trace, ctx: AuditContext) -> list[Criterion]:
    return [
        grounded(trace),
        not_collapsed(trace),
        covers_evidence(trace, ctx),
        layer_consistent(trace),
        type_carried(trace, ctx),
    ]


def type_carried(trace: Trace, ctx: AuditContext) -> Criterion:
    """The leading hypothesis's fault type is one its service's own evidence shows the primary
    sign of (a CPU fault its CPU, a delay time lost on its way in or in its own work, rule
    `delays`; an exception its logs)."""
    if not trace.hypotheses:
        return Criterion(STAGE, "type_carried", 1.0, 1.0, "no hypothesis to check")
    ep = trace.evidence_package
    top = trace.hypotheses[0]
    shown = supported_faults(
        ep.evidence,
        symptom=trace.symptom,
        graph=ctx.graph,
        edge_share=lambda e: ep.edge_shares.get(e, NO_GAPS),
        alert_time=ep.alert_time,
        window=ep.window,
        changes=ep.changes,
    ).get(top.service, frozenset())
    if top.fault_type in shown:
        return Criterion(
            STAGE,
            "type_carried",
            1.0,
            1.0,
            f"{top.service}'s evidence shows what a {top.fault_type.value} fault leaves",
        )
    other = ", ".join(sorted(f.value for f in shown)) or "no fault type"
    return Criterion(
        STAGE,
        "type_carried",
        0.0,
        1.0,
        f"{top.service}'s evidence shows no sign of a {top.fault_type.value} fault; it shows {other}",
        (top.id,),
        necessary=True,
    )


def covers_evidence(trace: Trace, ctx: AuditContext) -> Criterion:
    """The set keeps the explanations its own evidence supports most (none was dropped)."""
    fresh = hypothesis_set(trace.evidence_package, graph=ctx.graph, symptom=trace.symptom)[:3]
    if not fresh:
        return Criterion(STAGE, "covers_evidence", 1.0, 1.0, "the evidence supports no hypothesis")
    have = {h.service for h in trace.hypotheses}
    missing = [h.service for h in fresh if h.service not in have]
    score = 1.0 - len(missing) / len(fresh)
    why = (
        f"the evidence supports {', '.join(missing)}, missing from the set"
        if missing
        else "the strongest explanations of the evidence are all in the set"
    )
    return Criterion(STAGE, "covers_evidence", score, 1.0, why, tuple(missing))


def grounded(trace: Trace) -> Criterion:
    """Every hypothesis cites evidence of the package, about its own service."""
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    bad = [
        h.id
        for h in trace.hypotheses
        if not h.evidence or any(i not in by_id or by_id[i].entity != h.service for i in h.evidence)
    ]
    if not trace.hypotheses:
        return Criterion(STAGE, "grounded", 0.0, 1.0, "no hypotheses")
    score = 1.0 - len(bad) / len(trace.hypotheses)
    why = (
        f"{len(bad)} hypotheses cite no evidence, or evidence of another service"
        if bad
        else "every hypothesis cites its own evidence"
    )
    return Criterion(STAGE, "grounded", score, 1.5, why, tuple(bad))


def not_collapsed(trace: Trace) -> Criterion:
    """Competing explanations stay in the set: at least three services with evidence."""
    services = {h.service for h in trace.hypotheses if h.evidence}
    score = min(1.0, max(0, len(services) - 1) / 2)
    why = f"{len(services)} service(s) considered" + (": the set is anchored on one explanation" if score < 1 else "")
    return Criterion(STAGE, "not_collapsed", score, 1.0, why)


def layer_consistent(trace: Trace) -> Criterion:
    """A service is not blamed on host-level evidence alone (host, pod and service kept apart)."""
    if not trace.hypotheses:
        return Criterion(STAGE, "layer_consistent", 0.0, 0.5, "no hypotheses")
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    top = trace.hypotheses[0]
    cited = [by_id[i] for i in top.evidence if i in by_id]
    host = [ev.id for ev in cited if HOST_MARK in ev.detail]
    score = 1.0 - len(host) / len(cited) if cited else 0.0
    why = (
        f"{len(host)} of {len(cited)} items behind {top.service} describe its host, not the service"
        if host
        else "the leading hypothesis rests on the service's own telemetry"
    )
    return Criterion(STAGE, "layer_consistent", score, 0.5, why, tuple(host))
