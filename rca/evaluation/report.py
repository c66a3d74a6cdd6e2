"""Tables and the stable JSON format of an evaluation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from rca.calibration import (
    Calibration,
    Features,
    apart,
    case_features,
    expected_calibration_error,
    shipped,
)
from rca.evaluation.harness import CaseResult
from rca.evaluation.metrics import COVERAGES, Coverage, Outcome, Summary, coverage, summarise

FORMAT_VERSION = 5  # 2: each case's calibrated probability and tied first places; 3: learnt from marks;
# 4: whether the verdict would call it likely, as shipped and learnt; 5: whether the first place rests
# on the labelled fault's time (`grounded`)


def summaries(results: Sequence[CaseResult]) -> list[Summary]:
    """One row per (dataset, engine), per (dataset, fault type, engine) and per engine overall."""
    groups: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for r in results:
        o = r.outcome
        groups[(o.dataset, o.engine)].append(o)
        groups[(f"{o.dataset} · {o.truth_fault}", o.engine)].append(o)
        groups[("all", o.engine)].append(o)
    return [summarise(group, engine, outs) for (group, engine), outs in groups.items()]


def render_table(rows: Sequence[Summary]) -> str:
    """A plain-text table, datasets first, then their fault types, then the total. `ground` is
    AC@1 counting only first places that rest on the labelled fault's time (`grounded`; – for
    engines that write no trace)."""
    width = max([19, *(len(s.engine) for s in rows)])
    head = f"{'group':<44} {'engine':<{width}} {'cases':>5} {'AC@1':>6} {'ground':>6} {'AC@3':>6} {'Avg@5':>6} {'fault':>6} {'med s':>7} {'max s':>7} {'errors':>6}"
    lines = [head, "-" * len(head)]

    def order(s: Summary) -> tuple[int, str, str]:
        return (2 if s.group == "all" else 0, s.group, s.engine)

    for s in sorted(rows, key=order):
        lines.append(
            f"{s.group:<44} {s.engine:<{width}} {s.cases:>5} {s.ac1:>6.3f} {_g(s.ac1_grounded)} {s.ac3:>6.3f} {s.avg5:>6.3f} "
            f"{s.fault_acc:>6.3f} {s.median_seconds:>7.2f} {s.max_seconds:>7.2f} {s.errors:>6}"
        )
    return "\n".join(lines)


def _g(v: float | None) -> str:
    return f"{'–':>6}" if v is None else f"{v:>6.3f}"


def render_seed_spread(rows: Sequence[Summary]) -> str:
    """Per engine run with several sampling seeds (`<engine>@seed<N>` beside `<engine>`) and
    per dataset: the mean AC@1 and AC@3 over the seeds and their range; empty without seeds."""
    runs: dict[tuple[str, str], list[Summary]] = defaultdict(list)
    for s in rows:
        if " · " not in s.group:  # datasets and the total, not their fault types
            runs[(s.engine.partition("@seed")[0], s.group)].append(s)
    spread = {k: v for k, v in runs.items() if len(v) > 1}
    if not spread:
        return ""
    head = f"{'group':<44} {'engine':<19} {'seeds':>5} {'AC@1 mean':>9} {'min':>6} {'max':>6} {'AC@3 mean':>9}"
    lines = [head, "-" * len(head)]
    for (engine, group), ss in sorted(spread.items(), key=lambda kv: (kv[0][1] == "all", kv[0][1], kv[0][0])):
        ac1 = [s.ac1 for s in ss]
        lines.append(
            f"{group:<44} {engine:<19} {len(ss):>5} {sum(ac1) / len(ac1):>9.3f} {min(ac1):>6.3f} "
            f"{max(ac1):>6.3f} {sum(s.ac3 for s in ss) / len(ss):>9.3f}"
        )
    return "\n".join(lines)


def render_errors(results: Sequence[CaseResult]) -> str:
    """The runs that failed, each counted as a miss: case, engine and what broke."""
    failed = [r.outcome for r in results if r.error is not None]
    if not failed:
        return ""
    lines = [f"{len(failed)} run(s) failed, each counted as a miss:"]
    lines += [f"  {o.case_id}  {o.engine}: {o.error}" for o in failed]
    return "\n".join(lines)


def render_costs(results: Sequence[CaseResult]) -> str:
    """Per engine, what one investigation costs on average (the paper's Table 1 columns)."""
    by_engine: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_engine[r.diagnosis.engine].append(r)
    width = max([22, *(len(e) for e in by_engine)])
    head = f"{'engine':<{width}} {'AC@1':>6} {'calls':>6} {'tokens':>8} {'hyps':>6} {'evidence':>9} {'iters':>6} {'med s':>7}"
    lines = [head, "-" * len(head)]
    for engine, rs in by_engine.items():
        n = len(rs)
        costs = [r.diagnosis.cost for r in rs]
        s = summarise("all", engine, [r.outcome for r in rs])
        lines.append(
            f"{engine:<{width}} {s.ac1:>6.3f} {sum(c.llm_calls for c in costs) / n:>6.1f} "
            f"{sum(c.llm_tokens for c in costs) / n:>8.0f} {sum(c.hypotheses for c in costs) / n:>6.1f} "
            f"{sum(c.evidence_items for c in costs) / n:>9.1f} {sum(c.iterations for c in costs) / n:>6.1f} "
            f"{s.median_seconds:>7.2f}"
        )
    return "\n".join(lines)


def probability(r: CaseResult, calibration: Calibration | None = None) -> float:
    """The calibrated probability that the case's first place is right (rca.calibration)."""
    return (calibration or shipped()).probability(r.features)


def learnt(results: Sequence[CaseResult], calibration: Calibration | None = None) -> list[float]:
    """Each case's probability as a system that marked every earlier verdict would show it."""
    return [cal.probability(r.features) for r, cal in zip(results, taught(results, calibration), strict=True)]


def taught(results: Sequence[CaseResult], calibration: Calibration | None = None) -> list[Calibration]:
    """Each case's calibration as a system that marked every earlier verdict would hold it: the
    shipped one adapted (Calibration.adapted) to the earlier cases of its dataset and engine, in
    the evaluation's order; a case's own outcome never enters it."""
    cal = calibration or shipped()
    marks: dict[tuple[str, str], list[tuple[Features, bool]]] = defaultdict(list)
    out = []
    for r in results:
        key = (r.outcome.dataset, r.outcome.engine)
        out.append(cal.adapted(marks[key]))
        if r.error is None:
            marks[key].append((r.features, r.outcome.right))
    return out


def said_likely(r: CaseResult, calibration: Calibration | None = None) -> bool:
    """Whether the verdict would call the case's first place likely, as the bot's verdict
    decides it: no tie at the top, and a probability of at least the calibration's `likely`."""
    cal = calibration or shipped()
    return cal.says_likely(r.features, r.tied)


def ece_floor(probs: Sequence[float], draws: int = 400) -> float:
    """The median ECE of a forecaster calibrated by construction: outcomes drawn true with the
    very probabilities given (seeded). On a few dozen cases this is what sampling alone costs;
    an ECE near it cannot be told from a perfect calibration's."""
    p = np.asarray(probs, dtype=float)
    if p.size == 0:
        return 0.0
    rng = np.random.default_rng(0)
    return float(
        np.median([expected_calibration_error(p.tolist(), (rng.random(p.size) < p).tolist()) for _ in range(draws)])
    )


def calibration_rows(
    evaluation: dict, engine: str = "lats", name: str | None = None
) -> list[tuple[str, str, Features, bool]]:
    """From an evaluation's JSON (this module's format): per case of `engine`, its dataset (or
    `name`, the set the evaluation was saved under), the protocol, the features of its ranking
    and whether its first place was right."""
    out = []
    for case in evaluation.get("cases", []):
        if case.get("engine") != engine or case.get("error"):
            continue
        ranking = case.get("ranking") or []
        right = bool(ranking) and ranking[0]["service"] == case["truth"]["service"]
        out.append((name or str(case["dataset"]), str(evaluation.get("protocol", "")), case_features(case), right))
    return out


def render_fit(rows: Sequence[tuple[str, str, Features, bool]], calibration: Calibration) -> str:
    """Per (dataset, protocol): AC@1, mean probability and ECE in the fit, and left out: the
    same from a fit on the other datasets only (what a system never evaluated would get)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (dataset, protocol, _, _) in enumerate(rows):
        groups[(dataset, protocol)].append(i)
    head = f"{'dataset':<20} {'protocol':<36} {'cases':>5} {'AC@1':>6} {'mean p':>6} {'ECE':>6} {'out p':>6} {'out ECE':>7}"
    lines = [head, "-" * len(head)]
    left_out = apart([(d, f, ok) for d, _, f, ok in rows])  # a system never seen
    for (dataset, protocol), idx in sorted(groups.items()):
        right = [rows[i][3] for i in idx]
        probs = [calibration.probability(rows[i][2]) for i in idx]
        out = [left_out[dataset].probability(rows[i][2]) for i in idx] if dataset in left_out else probs
        lines.append(
            f"{dataset:<20} {protocol:<36} {len(idx):>5} {sum(right) / len(idx):>6.3f} "
            f"{sum(probs) / len(idx):>6.3f} {expected_calibration_error(probs, right):>6.3f} "
            f"{sum(out) / len(idx):>6.3f} {expected_calibration_error(out, right):>7.3f}"
        )
    return "\n".join(lines)


def render_calibration(results: Sequence[CaseResult], calibration: Calibration | None = None) -> str:
    """Per (dataset, engine): how far the calibrated probability of a first place is from how
    often it was right (ECE) beside what sampling alone costs a perfect calibration (floor),
    what share is said as likely and how often those were right, the same where the probability
    has learnt from every earlier case's mark (`learnt`), and the share of first places tied
    with the second."""
    cal = calibration or shipped()
    adapted = taught(results, cal)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(results):
        groups[(r.outcome.dataset, r.outcome.engine)].append(i)
        groups[("all", r.outcome.engine)].append(i)
    head = (
        f"{'group':<28} {'engine':<22} {'cases':>5} {'AC@1':>6} {'mean p':>6} {'ECE':>6} {'floor':>6} "
        f"{'likely':>6} {'AC@1 L':>6} {'| ECE learnt':>12} {'likely':>6} {'AC@1 L':>6} {'tied':>6}"
    )
    lines = [
        f"calibration (rca/calibration.json: 'likely' from p >= {cal.likely:.2f}): ECE of the first place's "
        "probability; floor = median ECE of a perfectly calibrated forecaster on these cases; likely = share "
        "said as likely, AC@1 L = how often those were right; learnt = each probability adapted to the marks "
        "of the cases before it (as a system whose engineers marked every verdict); tied = first places the "
        "evidence scores the same as the second",
        head,
        "-" * len(head),
    ]

    def said(rs: list[CaseResult], cals: list[Calibration], right: list[bool]) -> str:
        likely = [ok for r, c, ok in zip(rs, cals, right, strict=True) if said_likely(r, c)]
        return f"{len(likely) / len(right):>6.3f} " + (f"{sum(likely) / len(likely):6.3f}" if likely else "   -  ")

    for (group, engine), idx in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        rs = [results[i] for i in idx]
        probs = [probability(r, cal) for r in rs]
        taught_probs = [adapted[i].probability(results[i].features) for i in idx]
        right = [r.outcome.right for r in rs]
        lines.append(
            f"{group:<28} {engine:<22} {len(rs):>5} {sum(right) / len(rs):>6.3f} "
            f"{sum(probs) / len(probs):>6.3f} {expected_calibration_error(probs, right):>6.3f} "
            f"{ece_floor(probs):>6.3f} {said(rs, [cal] * len(rs), right)} "
            f"{expected_calibration_error(taught_probs, right):>12.3f} "
            f"{said(rs, [adapted[i] for i in idx], right)} {sum(r.tied > 1 for r in rs) / len(rs):>6.3f}"
        )
    return "\n".join(lines)


def to_json(results: Sequence[CaseResult], *, protocol: str = "") -> dict:
    """The stable evaluation format other tools read."""
    cases = []
    adapted = taught(results)
    for r, cal in zip(results, adapted, strict=True):
        d, o = r.diagnosis, r.outcome
        cases.append(
            {
                "engine": d.engine,
                "dataset": o.dataset,
                "case_id": o.case_id,
                "truth": {"service": o.truth_service, "fault_type": o.truth_fault.value},
                "ranking": [
                    {"service": c.service, "score": round(c.score, 6), "fault_type": c.fault_type.value}
                    for c in d.ranking
                ],
                "window": r.incident.window.to_iso() if r.incident is not None else None,
                "modalities": r.incident.sources.modalities() if r.incident is not None else {},
                "missing": list(d.missing),
                "seconds": round(o.seconds, 4),
                "llm_calls": d.cost.llm_calls,
                "llm_tokens": d.cost.llm_tokens,
                "error": r.error,
                "probability": round(probability(r), 4),
                "probability_learnt": round(cal.probability(r.features), 4),
                "likely": said_likely(r),
                "likely_learnt": said_likely(r, cal),
                "tied_first": r.tied,
                "grounded": o.grounded,
                "audit": (
                    {
                        "score": round(o.audit.score, 4),
                        "support": round(o.audit.support, 4),
                        "trust": round(o.audit.trust, 4),
                        "route": o.audit.route,
                        "weakest_stage": o.audit.weakest_stage,
                    }
                    if o.audit is not None
                    else None
                ),
            }
        )
    return {"version": FORMAT_VERSION, "protocol": protocol, "cases": cases}


def coverages(results: Sequence[CaseResult]) -> list[Coverage]:
    """Per (dataset, engine) and per engine overall, for the engines whose traces were audited."""
    groups: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for r in results:
        groups[(r.outcome.dataset, r.outcome.engine)].append(r.outcome)
        groups[("all", r.outcome.engine)].append(r.outcome)
    rows = [coverage(group, engine, outs) for (group, engine), outs in groups.items()]
    return sorted((c for c in rows if c is not None), key=lambda c: (c.group == "all", c.group, c.engine))


def render_coverage(rows: Sequence[Coverage]) -> str:
    """Does the audit say when the answer is wrong? AUROC of the audit's trust (and of its form
    score S alone) for a wrong first place, accuracy on the cases the audit accepts as they are
    against the others, and accuracy on the half, three quarters and nine tenths of cases it
    trusts most."""
    if not rows:
        return ""

    def f(x: float | None) -> str:
        return "   -  " if x is None else f"{x:6.3f}"

    width = max([19, *(len(c.engine) for c in rows)])
    kept = "".join(f" {f'@{c:.0%}':>6}" for c in COVERAGES)
    head = (
        f"{'group':<28} {'engine':<{width}} {'cases':>5} {'AC@1':>6} {'AUROC':>6} {'AUC S':>6} {'accept':>6} "
        f"{'AC@1 acc':>8} {'AC@1 flag':>9}{kept}"
    )
    lines = [
        "audit (STAR, default thresholds) as a predictor of a wrong first place "
        "(AUROC: of trust = S x support; AUC S: of the form score alone; @N%: AC@1 on the N% most trusted; "
        "@75% is what the verdicts the bot does not flag would score: it flags the least-trusted quarter)",
        head,
        "-" * len(head),
    ]
    for c in rows:
        at = "".join(f" {acc:>6.3f}" for _, acc in c.at_coverage)
        lines.append(
            f"{c.group:<28} {c.engine:<{width}} {c.cases:>5} {c.ac1:>6.3f} {f(c.auroc)} {f(c.auroc_form)} "
            f"{c.accepted:>6.3f} {f(c.ac1_accepted):>8} {f(c.ac1_flagged):>9}{at}"
        )
    return "\n".join(lines)
