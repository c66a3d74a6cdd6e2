"""S4 patches: calibrate confidence, prefer verification first under ambiguity, make the tests
match the mechanism."""

from __future__ import annotations

from dataclasses import replace

from rca.star.patches import Patch, RepairContext, by_violation
from rca.star.report import sufficiency
from rca.trace import Trace, decision_report

STAGE = "decision_report"
AMBIGUOUS_MARGIN = 0.1


async def calibrate(trace: Trace, ctx: RepairContext) -> Trace:
    return replace(trace, decision=replace(trace.decision, confidence=round(min(0.99, sufficiency(trace)), 4)))


async def verification_first(trace: Trace, ctx: RepairContext) -> Trace:
    """When the leaders are close, say so, cap confidence, and lead with the tests."""
    hyps = trace.hypotheses
    close = len(hyps) > 1 and hyps[0].value > 0 and (hyps[0].value - hyps[1].value) / hyps[0].value < AMBIGUOUS_MARGIN
    rebuilt = decision_report(trace.evidence_package, hyps, trace.chains, graph=ctx.audit.graph, symptom=trace.symptom)
    if not close:
        return replace(trace, decision=rebuilt)
    summary = "Ambiguous between " + " and ".join(h.service for h in hyps[:2]) + ": run the verification tests first. "
    return replace(
        trace, decision=replace(rebuilt, confidence=min(rebuilt.confidence, 0.5), summary=summary + rebuilt.summary)
    )


async def match_mechanism(trace: Trace, ctx: RepairContext) -> Trace:
    """Rewrite the ranking and the tests from the hypotheses (tests on each one's own signal)."""
    ep = trace.evidence_package
    return replace(
        trace,
        decision=decision_report(ep, trace.hypotheses, trace.chains, graph=ctx.audit.graph, symptom=trace.symptom),
    )


def candidates(trace: Trace, ctx: RepairContext, violated: set[str]) -> list[Patch]:
    table = {
        "calibrated": ("calibrate", calibrate),
        "agrees_with_analysis": ("match_mechanism", match_mechanism),
        "tests_discriminative": ("verification_first", verification_first),
    }
    return by_violation(STAGE, table, violated)
