"""STAR evaluated as in its paper: decisive-stage accuracy on injected reasoning faults (RQ2)
against attribution baselines, replays to a repair (RQ3), ablations (RQ4), and AC@k before
and after repair (RQ1)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rca.engines import Engine
from rca.evaluation.faults import INJECTIONS
from rca.model import IncidentCase
from rca.star.audit import Audit, audit
from rca.star.context import audit_context
from rca.star.memory import InMemoryRepairMemory
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, repair
from rca.trace import STAGES, Trace
from rca.trace_json import from_json

METHODS = (
    "star",
    "all_at_once",
    "step_by_step",
    "binary_search",
    "hybrid",
    "star_no_routing",
    "star_no_counterfactual",
)
CORRECTED_WITHIN = 0.02  # a repaired trace scores within this of the good trace's S
NEAR_MISS = 0.01  # epsilon: an injected trace this close to the good one takes the fast path


def all_at_once(v: Audit) -> str | None:
    """One look at the whole audit: the most severe stage."""
    worst = max(v.stages, key=lambda d: d.severity)
    return worst.stage if worst.severity > 0 else None


def step_by_step(v: Audit) -> str | None:
    """Stage by stage in causal order: the first with a violation."""
    return next((d.stage for d in v.stages if d.violations), None)


def binary_search(v: Audit) -> str | None:
    """Halve the stages by total severity, then take the worse of the pair."""
    sev = {d.stage: d.severity for d in v.stages}
    first, second = STAGES[:2], STAGES[2:]
    half = first if sum(sev[s] for s in first) >= sum(sev[s] for s in second) else second
    pick = max(half, key=lambda s: sev[s])
    return pick if sev[pick] > 0 else None


def hybrid(v: Audit) -> str | None:
    """Step by step over the stages whose severity is at least half the worst."""
    top = max(d.severity for d in v.stages)
    return next((d.stage for d in v.stages if d.violations and d.severity >= 0.5 * top), None) if top > 0 else None


BASELINES: dict[str, Callable[[Audit], str | None]] = {
    "all_at_once": all_at_once,
    "step_by_step": step_by_step,
    "binary_search": binary_search,
    "hybrid": hybrid,
}


@dataclass(frozen=True, slots=True)
class InjectedResult:
    case_id: str
    fault_type: str
    injection: str
    stage: str
    predicted: dict[str, str | None]
    replays: int  # patch-and-replay rounds that changed the trace
    corrected: bool
    evaluations: int = 0  # candidate replays STAR ran, without repair memory
    evaluations_with_memory: int = 0  # the same, with the memory of earlier cases


@dataclass(slots=True)
class StarReport:
    injected: list[InjectedResult] = field(default_factory=list)
    rq1: list[tuple[str, int | None, int | None]] = field(default_factory=list)  # case, rank before, after


def _rank(trace: Trace, service: str) -> int | None:
    names = [r[0] for r in trace.decision.ranking]
    return names.index(service) + 1 if service in names else None


async def evaluate_star(
    engine: Engine, cases: Sequence[IncidentCase], *, progress: Callable[[int, int, str], None] | None = None
) -> StarReport:
    report = StarReport()
    memory = InMemoryRepairMemory()  # fills as the run goes: later cases recall earlier repairs
    for n, case in enumerate(cases, start=1):
        incident = case.incident
        doc = (await engine.investigate(incident)).trace
        if doc is None:
            continue
        original = from_json(dict(doc))
        ctx = RepairContext(await audit_context(incident), recollector(incident))
        repaired = await repair(original, ctx, RepairConfig())
        report.rq1.append((case.id, _rank(original, case.label.service), _rank(repaired.trace, case.label.service)))
        good = (await repair(original, ctx, RepairConfig(tau=0.99, epsilon=0.0, rounds=3))).trace
        good_score = audit(good, ctx.audit).score
        for inj in INJECTIONS:
            bad = await inj.inject(good, ctx)
            if bad is None:
                continue
            verdict = audit(bad, ctx.audit)
            if verdict.score >= good_score - 1e-9:
                continue  # the injection changed nothing an audit could see
            predicted: dict[str, str | None] = {name: fn(verdict) for name, fn in BASELINES.items()}
            cfg = RepairConfig(tau=good_score - 1e-6, epsilon=NEAR_MISS)
            star = await repair(bad, ctx, cfg)
            predicted["star"] = star.decisive_stage
            predicted["star_no_routing"] = (
                await repair(bad, ctx, RepairConfig(tau=cfg.tau, epsilon=cfg.epsilon, routing=False))
            ).decisive_stage
            predicted["star_no_counterfactual"] = (
                await repair(bad, ctx, RepairConfig(tau=cfg.tau, epsilon=cfg.epsilon, counterfactual=False))
            ).decisive_stage
            corrected = star.after.score >= good_score - CORRECTED_WITHIN
            committed = sum(1 for step in star.steps if step.committed)  # patch-and-replay rounds kept
            recalled = await repair(bad, ctx, cfg, memory)
            report.injected.append(
                InjectedResult(
                    case.id,
                    case.label.fault_type.value,
                    inj.name,
                    inj.stage,
                    predicted,
                    committed,
                    corrected,
                    star.replays,
                    recalled.replays,
                )
            )
        if progress is not None:
            progress(n, len(cases), case.id)
    return report


def render(report: StarReport) -> str:
    """The tables of STAR's RQ1-RQ4 from one run."""
    out: list[str] = []
    out.append("Decisive-stage accuracy per injected stage (RQ2, RQ4)")
    out.append(_accuracy_table(report.injected, lambda r: r.stage, STAGES))
    out.append("")
    out.append("Decisive-stage accuracy per incident fault type (RQ2)")
    kinds = sorted({r.fault_type for r in report.injected})
    out.append(_accuracy_table(report.injected, lambda r: r.fault_type, kinds))
    out.append("")
    out.append("Repairs (RQ3): injected traces back within 0.02 of the good trace's S")
    buckets: dict[str, int] = defaultdict(int)
    for r in report.injected:
        key = "unresolved" if not r.corrected else f"{min(r.replays, 3)} replay(s)"
        buckets[key] += 1
    total = len(report.injected) or 1
    for key in ("0 replay(s)", "1 replay(s)", "2 replay(s)", "3 replay(s)", "unresolved"):
        out.append(f"  {key:<14} {buckets[key]:>5}  {buckets[key] / total:6.1%}")
    within_two = sum(buckets[k] for k in ("0 replay(s)", "1 replay(s)", "2 replay(s)"))
    out.append(f"  repaired within two replays: {within_two / total:.1%} of {len(report.injected)} injected faults")
    out.append("")
    out.append("Repair memory: candidate replays per injected fault, same faults, same order")
    rows = report.injected
    if rows:
        half = len(rows) // 2
        for label, sel in (("all", rows), ("second half of the run", rows[half:])):
            plain = sum(r.evaluations for r in sel) / len(sel)
            recalled = sum(r.evaluations_with_memory for r in sel) / len(sel)
            out.append(f"  {label:<24} without memory {plain:5.2f}   with memory {recalled:5.2f}")
    out.append("")
    out.append("AC@k before and after STAR repair (RQ1)")
    n = len(report.rq1) or 1
    for label, ranks in (("before", [r[1] for r in report.rq1]), ("after", [r[2] for r in report.rq1])):
        ac1 = sum(1 for x in ranks if x == 1) / n
        ac3 = sum(1 for x in ranks if x is not None and x <= 3) / n
        out.append(f"  {label:<7} AC@1 {ac1:.3f}  AC@3 {ac3:.3f}  ({len(report.rq1)} cases)")
    return "\n".join(out)


def _accuracy_table(rows: Sequence[InjectedResult], key: Callable[[InjectedResult], str], groups: Sequence[str]) -> str:
    head = f"  {'group':<20} {'n':>4} " + " ".join(f"{m[:13]:>13}" for m in METHODS)
    lines = [head]
    for g in list(groups) + ["all"]:
        sel = [r for r in rows if g == "all" or key(r) == g]
        if not sel:
            continue
        accs = [sum(1 for r in sel if r.predicted.get(m) == r.stage) / len(sel) for m in METHODS]
        lines.append(f"  {g:<20} {len(sel):>4} " + " ".join(f"{a:>13.3f}" for a in accs))
    return "\n".join(lines)
