"""STAR's repair loop: route by the audit score, localise the decisive stage by patch and
replay, commit the patch, remember what worked.

    accept     S >= tau: the trace stands
    fast path  tau - epsilon <= S < tau: patch the most severe stage once, replay downstream
               (kept only if it beats the same replay without the patch, else the slow path)
    slow path  S < tau - epsilon: for each stage in causal order, the critic's K candidates are
               applied and replayed and the trace re-audited; the decisive stage is the earliest
               whose best candidate improves S by at least delta over both the trace and a
               control that replays the same downstream stages without the patch (a stage
               whose control alone repairs the trace is passed over: the defect is downstream)
If no stage helps and the analysis, run afresh, holds no topology-feasible, telemetry-supported
chain, InsufficientEvidence rolls the repair back to S1 (recollect evidence, replay the rest). After I rounds without acceptance the report turns
verification-first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx

from rca.errors import RcaError
from rca.star.audit import Audit, Route, StarConfig, audit
from rca.star.memory import Pattern, RepairMemory, RepairRecord
from rca.star.patches import Patch, RepairContext
from rca.star.patches import analysis as as_patches
from rca.star.patches import hypotheses as hs_patches
from rca.star.patches import package as ep_patches
from rca.star.patches import report as dr_patches
from rca.trace import STAGES, Trace


class InsufficientEvidenceException(RcaError):
    """No causal chain is both a path in the call graph and supported by telemetry."""


@dataclass(frozen=True, slots=True)
class RepairConfig:
    tau: float = 0.8
    epsilon: float = 0.1
    k: int = 4  # candidates per stage critic
    delta: float = 0.02  # the improvement that makes a stage decisive
    rounds: int = 3  # I
    routing: bool = True  # ablation: without it every trace takes the slow path
    counterfactual: bool = True  # ablation: without it the most severe stage is patched blind

    @property
    def star(self) -> StarConfig:
        return StarConfig(self.tau, self.epsilon)


@dataclass(frozen=True, slots=True)
class RepairStep:
    round: int
    route: str
    stage: str
    patch: str
    before: float
    after: float
    committed: bool = True  # False: the best candidate, tried and not kept


@dataclass(frozen=True, slots=True)
class RepairResult:
    trace: Trace
    before: Audit
    after: Audit
    steps: tuple[RepairStep, ...]
    decisive_stage: str | None
    replays: int
    verification_first: bool
    rolled_back: bool


_CRITICS = {
    "evidence_package": ep_patches.candidates,
    "hypothesis_set": hs_patches.candidates,
    "analysis_structure": as_patches.candidates,
    "decision_report": dr_patches.candidates,
}
_REPLAY_FROM = {
    "evidence_package": "hypothesis_set",
    "hypothesis_set": "analysis_structure",
    "analysis_structure": "decision_report",
    "decision_report": None,
}


def check_feasible(trace: Trace, graph: nx.DiGraph) -> None:
    """Raise InsufficientEvidenceException when no leading hypothesis has a sound chain."""
    if not trace.hypotheses:
        raise InsufficientEvidenceException("no hypothesis to explain the symptom")
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    for chain in trace.chains:
        if chain.root == trace.symptom:
            return
        # a path of calls from the symptom down to the root, whose first step (out of the
        # root) is backed by the root's own telemetry
        feasible = bool(chain.links) and all(graph.has_edge(ln.target, ln.source) for ln in chain.links)
        first = chain.links[0] if chain.links else None
        if feasible and first is not None and any(i in by_id and by_id[i].entity == chain.root for i in first.evidence):
            return
    raise InsufficientEvidenceException(
        "no chain from a leading hypothesis to the symptom is a path in the call graph with evidence on every link"
    )


async def apply_patch(patch: Patch, trace: Trace, ctx: RepairContext) -> Trace:
    """Apply a patch, then replay every stage downstream of its own."""
    patched = await patch.apply(trace, ctx)
    start = _REPLAY_FROM[patch.stage]
    return ctx.replay(patched, start) if start else patched


def critic(
    stage: str, trace: Trace, ctx: RepairContext, verdict: Audit, k: int, remembered: Sequence[RepairRecord] = ()
) -> list[Patch]:
    """K patch candidates for a stage: the operator for a violated requirement first (it is
    what keeps the trace from acceptance, whatever else scores), then remembered templates,
    then the stage's own order."""
    violated = {c.name for c in verdict.criteria if c.stage == stage and c.score < 1.0}  # every shortfall
    required = {c.name for c in verdict.criteria if c.stage == stage and c.unmet}
    proposals = _CRITICS[stage](trace, ctx, violated)
    liked = [r.patch for r in remembered if r.stage == stage]
    proposals.sort(key=lambda p: liked.index(p.name) if p.name in liked else len(liked))
    if required and (first := _CRITICS[stage](trace, ctx, required)):
        proposals.sort(key=lambda p: p.name != first[0].name)
    return proposals[:k]


async def propose_patches(
    stage: str, trace: Trace, ctx: RepairContext, verdict: Audit, k: int, remembered: Sequence[RepairRecord] = ()
) -> list[Patch]:
    """K candidates for a stage: the offline critic's menu, ordered by the model critic if any."""
    menu = critic(stage, trace, ctx, verdict, 99, remembered)
    if ctx.critic is not None and len(menu) > 1:
        menu = await ctx.critic(stage, verdict, menu, k)
    return menu[:k]


def _constant(trace: Trace):  # type: ignore[no-untyped-def]
    async def regenerate(_: Trace, __: RepairContext) -> Trace:
        return trace

    return regenerate


def _stage_order(remembered: Sequence[RepairRecord]) -> list[str]:
    """Causal order, with stages that repaired similar incidents tried first (the prior)."""
    prior = list(dict.fromkeys(r.stage for r in remembered))
    return prior + [s for s in STAGES if s not in prior]


async def _localise(
    stages: Sequence[str],
    rollback: bool,
    current: Trace,
    verdict: Audit,
    ctx: RepairContext,
    config: RepairConfig,
    remembered: Sequence[RepairRecord],
    rnd: int,
    route: Route,
    record: Callable[[RepairStep], None],
) -> tuple[tuple[str, Trace, Audit] | None, int]:
    """One slow-path pass: the first stage whose best candidate beats its control by the
    needed margin, with the patched trace and its audit; and the replays it took."""
    replays = 0
    liked = {(r.stage, r.patch) for r in remembered}
    # significant: delta, or half of what separates the trace from acceptance if that is less
    need = max(1e-6, min(config.delta, 0.5 * (config.tau - verdict.score)))
    previous: Trace | None = None  # the last control that helped: this stage re-run from upstream
    for stage in stages:
        # the control: the downstream stages replayed with this stage left as it is; a
        # patch counts only for what it adds to that (replay alone repairs nothing here).
        # A rollback recollects evidence whatever the replay alone would do.
        start = _REPLAY_FROM[stage]
        control = ctx.replay(current, start) if start else current
        control_score = audit(control, ctx.audit, config.star).score
        replays += 1 if start else 0
        if control_score > verdict.score + 1e-9 and not rollback:
            previous = control  # replaying what follows this stage helps: the defect lies there
            continue
        baseline = verdict.score if rollback else max(verdict.score, control_score)
        best: tuple[float, Trace, Patch] | None = None
        proposals = await propose_patches(stage, current, ctx, verdict, config.k, remembered)
        if previous is not None:  # re-running this stage from its inputs is a candidate too
            proposals.insert(0, Patch(stage, "regenerate", _constant(previous)))
        for patch in proposals:
            candidate = await apply_patch(patch, current, ctx)
            replays += 1
            score = audit(candidate, ctx.audit, config.star).score
            if best is None or score > best[0]:
                best = (score, candidate, patch)
            if (stage, patch.name) in liked and score - baseline >= need:
                break  # what repaired similar incidents worked again: no need to try the rest
        if best is None:
            continue
        if best[0] - baseline < need:
            record(RepairStep(rnd, route.value, stage, best[2].name, verdict.score, best[0], False))
            continue
        after = audit(best[1], ctx.audit, config.star)
        record(RepairStep(rnd, route.value, stage, best[2].name, verdict.score, after.score))
        return (stage, best[1], after), replays
    return None, replays


async def repair(
    trace: Trace,
    ctx: RepairContext,
    config: RepairConfig = RepairConfig(),
    memory: RepairMemory | None = None,
    *,
    progress: Callable[[RepairStep], None] | None = None,
) -> RepairResult:
    """Audit, route and repair a trace within the round budget; `progress` sees each step."""
    first = audit(trace, ctx.audit, config.star)
    lead = trace.hypotheses[0].service if trace.hypotheses else ""
    degree = ctx.audit.graph.degree(lead) if lead in ctx.audit.graph else 0
    pattern = Pattern.of(trace, int(degree))
    remembered = memory.similar(pattern) if memory is not None else ()
    current, verdict = trace, first
    steps: list[RepairStep] = []

    def record(step: RepairStep) -> None:
        steps.append(step)
        if progress is not None:
            progress(step)

    replays, decisive, rolled_back, escalate = 0, None, False, False
    for rnd in range(1, config.rounds + 1):
        route = verdict.route if config.routing else (Route.ACCEPT if verdict.score >= config.tau else Route.SLOW)
        if route is Route.ACCEPT:
            break
        if escalate:  # a fast patch that did not help: the defect is upstream of it
            route = Route.SLOW
        try:  # can the analysis, run afresh on this evidence, find a sound chain at all?
            check_feasible(ctx.replay(current, "analysis_structure"), ctx.audit.graph)
            insufficient = False
        except InsufficientEvidenceException:
            insufficient = True
        if route is Route.FAST or not config.counterfactual:
            # the stage of a violated requirement (what keeps the trace from acceptance), else
            # the most severe one
            required = [c.stage for c in verdict.criteria if c.unmet]
            blamed = verdict.blamed
            stage = (
                min(required, key=STAGES.index) if required else "evidence_package" if blamed is None else blamed.stage
            )
            patch = (await propose_patches(stage, current, ctx, verdict, 1, remembered))[0]
            candidate = await apply_patch(patch, current, ctx)
            replays += 1
            after = audit(candidate, ctx.audit, config.star)
            helped = after.score > verdict.score
            start = _REPLAY_FROM[stage]
            if helped and config.counterfactual and start:
                # the same replay without the patch: if it does as well, the defect lies downstream
                replays += 1
                control = audit(ctx.replay(current, start), ctx.audit, config.star)
                helped = after.score > control.score + 1e-9
            record(RepairStep(rnd, route.value, stage, patch.name, verdict.score, after.score, helped))
            if helped:
                current, verdict, decisive = candidate, after, decisive or stage
            else:
                escalate = True
            continue
        # the stages in causal order; then, if no stage helped and the evidence supports no
        # sound chain, the rollback: recollect evidence (S1), replaying everything after it
        passes = [(_stage_order(remembered), False)] + ([(["evidence_package"], True)] if insufficient else [])
        found = None
        for stages, rollback in passes:
            found, used = await _localise(
                stages, rollback, current, verdict, ctx, config, remembered, rnd, route, record
            )
            replays, rolled_back = replays + used, rolled_back or rollback
            if found is not None:
                stage, current, verdict = found
                decisive = decisive or stage
                break
        if found is None:
            break
    budget_spent = verdict.score < config.tau and verdict.route is not Route.ACCEPT
    if budget_spent:
        current = await apply_patch(
            Patch("decision_report", "verification_first", dr_patches.verification_first), current, ctx
        )
        verdict = audit(current, ctx.audit, config.star)
    if memory is not None and decisive is not None and verdict.score - first.score >= config.delta:
        patch_name = next(s.patch for s in steps if s.stage == decisive and s.committed)
        memory.remember(RepairRecord(pattern, decisive, patch_name, round(verdict.score - first.score, 4)))
    return RepairResult(current, first, verdict, tuple(steps), decisive, replays, budget_spent, rolled_back)
