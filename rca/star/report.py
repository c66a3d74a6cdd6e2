"""S4, the decision report: calibrated, agreeing with the analysis, with discriminative tests."""

from __future__ import annotations

from rca.model import FaultType
from rca.star.criteria import MECHANISM_TOOLS, AuditContext, Criterion
from rca.trace import Trace, analysed_order

STAGE = "decision_report"


def check(trace: Trace, ctx: AuditContext) -> list[Criterion]:
    return [calibrated(trace), agrees_with_analysis(trace, ctx), tests_discriminative(trace)]


def sufficiency(trace: Trace) -> float:
    """How much the evidence supports the leading hypothesis: its value and its lead."""
    hyps = trace.hypotheses
    if not hyps:
        return 0.0
    second = hyps[1].value if len(hyps) > 1 else 0.0
    margin = (hyps[0].value - second) / hyps[0].value if hyps[0].value > 0 else 0.0
    return hyps[0].value * (0.6 + 0.4 * margin)


def calibrated(trace: Trace) -> Criterion:
    """The stated confidence is no higher than the evidence supports (and not far lower)."""
    conf = trace.decision.confidence
    need = sufficiency(trace)
    over = max(0.0, conf - need)
    under = max(0.0, need - conf)
    score = max(0.0, 1.0 - 2.0 * over - 0.5 * under)
    why = f"confidence {conf:.2f} for evidence worth {need:.2f}" + (": overconfident" if over > 0.1 else "")
    return Criterion(STAGE, "calibrated", score, 1.0, why)


def agrees_with_analysis(trace: Trace, ctx: AuditContext) -> Criterion:
    """The ranking follows the hypotheses' values, broken chains after sound ones, and the
    leading one has a causal chain."""
    ranked = [r[0] for r in trace.decision.ranking[:3]]
    ordered = analysed_order(trace.hypotheses, trace.chains, graph=ctx.graph, evidence=trace.evidence_package.evidence)
    by_value = [h.service for h in ordered[:3]]
    if not ranked:
        return Criterion(STAGE, "agrees_with_analysis", 0.0, 1.5, "empty ranking")
    same = sum(1 for a, b in zip(ranked, by_value, strict=False) if a == b) / max(len(ranked), 1)
    chained = {c.root for c in trace.chains}
    score = same * (1.0 if ranked[0] in chained else 0.5)
    why = (
        "the ranking follows the analysis"
        if score == 1.0
        else f"ranking {ranked} against the analysis' {by_value}"
        + ("" if ranked[0] in chained else "; no chain for the top")
    )
    return Criterion(STAGE, "agrees_with_analysis", score, 1.5, why)


def tests_discriminative(trace: Trace) -> Criterion:
    """Tests separate the leading hypotheses and observe each one's mechanism."""
    tests = trace.decision.tests
    hyps = {h.id: h for h in trace.hypotheses}
    if not tests:
        return Criterion(STAGE, "tests_discriminative", 0.0, 1.0, "no verification test")
    covered = {t.hypothesis for t in tests if t.hypothesis in hyps}
    on_target = [t for t in tests if t.hypothesis in hyps and t.target == hyps[t.hypothesis].service]
    mechanism = [
        t
        for t in on_target
        if t.tool in MECHANISM_TOOLS.get(hyps[t.hypothesis].fault_type, MECHANISM_TOOLS[FaultType.UNKNOWN])
    ]
    spread = min(1.0, len(covered) / min(2, len(hyps))) if hyps else 0.0
    separating = [t for t in tests if {o for _, o in t.expected} == {"anomalous", "normal"}]
    score = (spread + len(on_target) / len(tests) + len(mechanism) / len(tests) + len(separating) / len(tests)) / 4
    bad = tuple(t.id for t in tests if t not in mechanism)
    why = (
        f"{len(covered)} hypotheses tested; {len(mechanism)} of {len(tests)} tests observe the "
        "hypothesised mechanism on its service"
    )
    return Criterion(STAGE, "tests_discriminative", score, 1.0, why, bad)
