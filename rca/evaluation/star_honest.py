"""STAR judged as an on-call engineer meets it: reasoning errors it did not write, clean traces
it must leave alone, and repairs judged by the label.

`rca.evaluation.star_eval` injects the negation of each audit criterion and scores the stage
it was written into; this evaluation does not tell the auditor anything. For every case, under
the realistic window protocol, lats's own trace is taken as it is (right or wrong) and:

- rewritten harmlessly (evidence ids renamed, the confidence moved by 0.05, the leader's
  chain drawn along another call path as short as its own): an audit that routes these to
  repair, or flags them, raises a false alarm;
- given one of the reasoning errors a real agent makes, none of them the negation of one
  criterion: a believable victim made root (its chain rebuilt from its real evidence),
  confidence kept while the evidence is cut to one weak item, anchoring on the earliest
  anomaly, the right service with a neighbouring fault type, two errors at once, and an
  independent run that could read only 4 times (so the root is sometimes never read).

Each variant is audited at the default thresholds (tau 0.8, epsilon 0.1). Detected: the audit
routes it to repair; flagged: its trust is in the lowest quarter of the clean traces' (what the
bot's verdict flags). A detected variant is repaired (one round) and its first place is judged
against the label, as is the variant's own first place before the repair. A variant that says
what lats's own trace says (`content`: a read budget that did not bind) holds no error to
detect: it is left out of the faults and counted apart.

Replays are independent samplings of the reasoner, not the function that built the trace (nor
the one the audit re-derives with): each replay a repair takes, STAR's or the localiser's,
scores with every constant of the hypothesis value drawn within +-REPLAY_SPREAD of its own (the
offline reasoner's counterpart of a model's replay at a temperature above zero), and the
evidence stage is replayed by reading the telemetry again. With spread 0 a replay of the
hypothesis set restores what the family's error replaced, which is what made a replay an
oracle in `rca.evaluation.star_eval`.

Each family is written into known stages (`WRITTEN`). For a detected variant, the stage STAR's
repair names decisive is judged against them, beside a plain replay-comparison localiser given
the same number of replays: it replays from the last stage back to the first (the evidence by
reading the package's scope again) and names the first stage whose replay the audit accepts,
else the one whose replay it scores highest.
"""

from __future__ import annotations

import hashlib
import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

from rca.engines import build_engine
from rca.evaluation.metrics import separation
from rca.evaluation.protocols import Protocol
from rca.evaluation.reasoning_errors import (
    FAMILIES,
    READ_BUDGET_FAMILY,
    SMALL_BUDGET,
    WRITTEN,
    nudged_confidence,
    other_shortest_path,
    renamed_ids,
)
from rca.evidence import EvidenceId
from rca.model import IncidentCase
from rca.rules.config import ScoringConfig
from rca.star.audit import Audit, Route, audit
from rca.star.context import audit_context
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, repair
from rca.trace import STAGES, Trace
from rca.trace_json import from_json

# each replay's constants within +-25 % of their own: the tolerance the generality issue asks
# the settings to survive (bench/perturb.py), here as the variation between two samplings
REPLAY_SPREAD = 0.25
CLEAN = "clean"


@dataclass(frozen=True, slots=True)
class Variant:
    case: str
    family: str  # a fault family, or "clean" for a harmless rewrite
    changed_top: bool  # its first place differs from lats's own trace's
    right: bool  # its first place is the label's service
    route: str
    trust: float
    repaired_right: bool | None  # after one repair round, where the audit routed it to repair
    type_right: bool = False  # its first place carries the label's fault type
    repaired_type_right: bool | None = None
    decisive: str | None = None  # the stage STAR's repair named decisive, where routed
    baseline: str | None = None  # the replay-comparison localiser's stage, with as many replays
    replays: int = 0  # the replays STAR's repair took (the baseline's allowance)
    written: bool = True  # False: the variant says what lats's own trace says (no error to detect)


@dataclass(slots=True)
class HonestReport:
    variants: list[Variant] = field(default_factory=list)
    cases: int = 0
    spread: float = REPLAY_SPREAD

    def to_json(self) -> dict[str, object]:
        return {
            "version": 3,
            "protocol": "realistic",
            "cases": self.cases,
            "replay_spread": self.spread,
            "variants": [asdict(v) for v in self.variants],
        }


def sampled(key: str, spread: float) -> Callable[[], ScoringConfig]:
    """The readings one repair's replays score with: each call an independent draw of every
    constant within +-spread of its own, the draws seeded by `key` (a run is reproducible);
    the reasoner's own constants when spread is 0."""
    base = ScoringConfig()
    if spread <= 0:
        return lambda: base
    rng = random.Random(hashlib.sha256(key.encode()).digest())
    return lambda: base.scaled(lambda: rng.uniform(1.0 - spread, 1.0 + spread))


def _top(t: Trace) -> str | None:
    return t.decision.ranking[0][0] if t.decision.ranking else None


async def evaluate_honest(
    cases: Sequence[IncidentCase],
    *,
    protocol: Protocol = Protocol(),
    spread: float = REPLAY_SPREAD,
    progress: Callable[[int, int, str], None] | None = None,
) -> HonestReport:
    report = HonestReport(spread=spread)
    engine, budgeted = build_engine("lats"), build_engine("lats", read_budget=SMALL_BUDGET)
    for n, case in enumerate(cases, start=1):
        incident = await protocol.place(case)
        doc = (await engine.investigate(incident)).trace
        if doc is not None:
            report.cases += 1
            own = from_json(dict(doc))
            ctx = await audit_context(incident)
            repair_ctx = RepairContext(ctx, recollector(incident))
            sign = 1.0 if sum(map(ord, case.id)) % 2 else -1.0  # which way the confidence moves, per case
            variants: list[tuple[str, Trace]] = [
                (CLEAN, renamed_ids(own)),
                (CLEAN, nudged_confidence(own, 0.05 * sign)),
            ]
            if (detour := other_shortest_path(own, ctx.graph)) is not None:
                variants.append((CLEAN, detour))
            variants += [(name, bad) for name, fn in FAMILIES.items() if (bad := fn(own, ctx)) is not None]
            small = (await budgeted.investigate(incident)).trace
            if small is not None:
                variants.append((READ_BUDGET_FAMILY, from_json(dict(small))))
            for k, (family, t) in enumerate(variants):
                verdict = audit(t, ctx)
                seed = f"{case.id}/{k}/{family}"
                report.variants.append(await _judged(case, family, own, t, verdict, repair_ctx, seed, spread))
        if progress is not None:
            progress(n, len(cases), case.id)
    return report


async def _judged(
    case: IncidentCase, family: str, own: Trace, t: Trace, verdict: Audit, ctx: RepairContext, seed: str, spread: float
) -> Variant:
    """One variant judged: routed, repaired (one round) and localised, STAR and the baseline
    each drawing its replays from `seed`."""
    fixed = fixed_type = decisive = baseline = None
    replays = 0
    if verdict.route is not Route.ACCEPT:
        result = await repair(t, replace(ctx, reading=sampled(seed, spread)), RepairConfig(rounds=1))
        fixed = _top(result.trace) == case.label.service
        fixed_type = _type(result.trace) == case.label.fault_type.value
        decisive, replays = result.decisive_stage, result.replays
        if family != CLEAN:
            baseline = await replay_localise(t, replace(ctx, reading=sampled(seed, spread)), replays)
    return Variant(
        case.id,
        family,
        _top(t) != _top(own),
        _top(t) == case.label.service,
        verdict.route.value,
        verdict.trust,
        fixed,
        _type(t) == case.label.fault_type.value,
        fixed_type,
        decisive,
        baseline,
        replays,
        family == CLEAN or content(t) != content(own),
    )


def content(t: Trace) -> tuple[object, ...]:
    """What a trace says, whatever its evidence ids and cost: the evidence read, the
    hypotheses on it, the chains and the ranking. Two runs that read the same telemetry to the
    same conclusion say the same; a small read budget that did not bind wrote no error."""
    ep = t.evidence_package
    fact = {
        ev.id: (ev.entity, ev.kind.value, ev.subject, ev.signal.value, ev.score, ev.onset, ev.until, ev.direction)
        for ev in ep.evidence
    }

    def facts(ids: Sequence[EvidenceId]) -> tuple[object, ...]:
        return tuple(sorted((fact.get(i, ()) for i in ids), key=repr))

    hyps: dict[str, tuple[object, ...]] = {
        h.id: (h.service, h.fault_type.value, h.value, facts(h.evidence)) for h in t.hypotheses
    }
    return (
        tuple(sorted(fact.values(), key=repr)),
        tuple(sorted(ep.scope)),
        tuple(sorted(hyps.values(), key=repr)),
        tuple(
            sorted(
                (
                    (
                        hyps.get(c.hypothesis),
                        c.root,
                        tuple((ln.source, ln.target, facts(ln.evidence)) for ln in c.links),
                    )
                    for c in t.chains
                ),
                key=repr,
            )
        ),
        tuple((service, fault, confidence, hyps.get(h)) for service, fault, confidence, h in t.decision.ranking),
    )


async def replay_localise(t: Trace, ctx: RepairContext, replays: int) -> str | None:
    """The plain replay-comparison localiser: from the last stage back, replay each (the
    evidence by reading the package's scope again) while replays last; the first stage whose
    replay the audit accepts, else the one it scores highest (None: no replay allowed)."""
    best: tuple[float, str] | None = None
    for stage in reversed(STAGES):
        if replays <= 0:
            break
        replays -= 1
        if stage == STAGES[0]:
            if ctx.recollect is None:
                continue
            fresh = await ctx.recollect(t, tuple(t.evidence_package.scope), 0.0)
            again = ctx.replay(fresh, STAGES[1])
        else:
            again = ctx.replay(t, stage)
        verdict = audit(again, ctx.audit)
        if verdict.route is Route.ACCEPT:
            return stage
        if best is None or verdict.score > best[0]:
            best = (verdict.score, stage)
    return best[1] if best else None


def _type(t: Trace) -> str | None:
    return str(t.decision.ranking[0][1]) if t.decision.ranking else None


def render(report: HonestReport) -> str:
    clean = [v for v in report.variants if v.family == CLEAN]
    trusted = [v.trust for v in clean]
    quarter = statistics.quantiles(trusted, n=4)[0] if len(clean) >= 2 else 0.0
    head = (
        f"{'variant':<26}{'n':>5}{'top moved':>10}{'right':>8}{'routed':>8}{'flagged':>9}"
        f"{'AUROC':>7}{'right after':>13}{'stage':>7}{'replay':>8}{'type':>7}{'type after':>12}"
    )
    sampling = (
        f"each replay's constants drawn within +-{report.spread:g} of their own"
        if report.spread > 0
        else "replays by the function that built the trace"
    )
    lines = [
        f"STAR on errors it did not write ({report.cases} cases, realistic windows, tau 0.8, epsilon 0.1; {sampling})",
        "routed: the audit sends it to repair; flagged: trust in the clean traces' lowest quarter "
        f"(below {quarter:.3f}); AUROC: clean trust above this variant's; right after: first place right "
        "after one repair round (unrouted ones as they are); stage, replay: of the routed, the decisive stage "
        "found where the error was written, by STAR and by a replay-comparison localiser given as many replays; "
        "type, type after: its fault type right, before and after",
        head,
        "-" * len(head),
    ]
    for family in [CLEAN, *FAMILIES, READ_BUDGET_FAMILY]:
        if rows := [v for v in report.variants if v.family == family and v.written]:
            lines.append(_row(family, rows, None if family == CLEAN else trusted, quarter, types=True))
    if faulted := [v for v in report.variants if v.family != CLEAN and v.written]:
        lines.append(_row("all faults", faulted, trusted, quarter, types=False))  # fault types mean nothing pooled
    if same := [v for v in report.variants if not v.written]:
        per = ", ".join(f"{f} {n}" for f, n in sorted(Counter(v.family for v in same).items()))
        lines += [
            f"left out: {len(same)} variant(s) saying what lats's own trace says, no error written ({per}); "
            "counted as faults:",
            _row(
                "all faults and those", [v for v in report.variants if v.family != CLEAN], trusted, quarter, types=False
            ),
        ]
    return "\n".join(lines)


def _row(label: str, rows: Sequence[Variant], clean: Sequence[float] | None, quarter: float, *, types: bool) -> str:
    """One line of the table: shares over `rows`; the AUROC of `clean` trust over theirs."""
    n = len(rows)
    area = separation(clean, [v.trust for v in rows]) if clean is not None else None
    after = sum((v.repaired_right if v.repaired_right is not None else v.right) for v in rows) / n
    line = (
        f"{label:<26}{n:>5}{sum(v.changed_top for v in rows) / n:>10.3f}{sum(v.right for v in rows) / n:>8.3f}"
        f"{sum(v.route != Route.ACCEPT.value for v in rows) / n:>8.3f}{sum(v.trust < quarter for v in rows) / n:>9.3f}"
        f"{'-' if area is None else f'{area:.3f}':>7}{after:>13.3f}"
        f"{_share(rows, 'decisive'):>7}{_share(rows, 'baseline'):>8}"
    )
    if types:
        type_after = (
            sum((v.repaired_type_right if v.repaired_type_right is not None else v.type_right) for v in rows) / n
        )
        line += f"{sum(v.type_right for v in rows) / n:>7.3f}{type_after:>12.3f}"
    return line


def _share(rows: Sequence[Variant], localiser: str) -> str:
    """Of the routed rows of fault families, the share whose stage named by `localiser`
    ("decisive": STAR's; "baseline": the replay comparison's) is one the error was written into."""
    routed = [v for v in rows if v.family in WRITTEN and v.route != Route.ACCEPT.value]
    if not routed:
        return "-"
    return f"{sum(getattr(v, localiser) in WRITTEN[v.family] for v in routed) / len(routed):.3f}"
