"""Can what a verdict sees of itself tell how often its first place is right, across systems?

The shipped calibration (rca.calibration) reads the first place's confidence and its lead over
the second. Its probability averages about 0.75 on every set and protocol while accuracy runs
from 0.1 to 0.96, so the expected calibration error (ECE) is far above 0.10 on several. This
asks whether more of what the trace shows would carry from the sets a model is fitted on to
one it has never seen. Per case of lats, under each protocol, from its trace:

- `confidence`, `lead`: the shipped features;
- `first under way`: every piece of the first place's evidence was anomalous from the data's
  first sample (when it began is not seen);
- `onset seen`: the timing rule found when the incident began (an alert time, or the symptom's
  anomaly begun inside the window);
- `set aside stronger`: the strongest evidence the timing rule set aside as another incident's
  is stronger than the first place's strongest evidence it kept.

Each set of features is fitted by the shipped method (rca.calibration.logistic) on every set
(in), and on every set but one for that one (left out: a system never seen). Printed per set
and protocol: AC@1, mean probability and ECE, in and left out; then the mean and worst ECE.

usage: python -m bench.confidence PATH [PATH ...] --rows OUT.json [--protocols realistic,late,...]
       python -m bench.confidence --fit ROWS.json [ROWS.json ...]
(collect each set in its own process, side by side, then fit on all the rows together)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rca.calibration import expected_calibration_error, logistic, trace_features
from rca.engines import build_engine
from rca.evaluation.harness import evaluate
from rca.evaluation.protocols import parse_protocol
from rca.rules.timing import elsewhere, reference
from rca.sources.datasets import find_cases
from rca.trace_json import from_json

PROTOCOLS = {  # name: (placement, hidden), as scripts/results.sh runs them
    "realistic": ("realistic", ""),
    "late": ("late", ""),
    "cropped": ("cropped", ""),
    "metrics-only": ("realistic", "logs,traces"),
    "resampled-60s": ("realistic", ""),
}
FEATURE_SETS = {
    "shipped (confidence, lead)": ("confidence", "lead"),
    "+ first under way": ("confidence", "lead", "first under way"),
    "+ onset seen": ("confidence", "lead", "onset seen"),
    "+ set aside stronger": ("confidence", "lead", "set aside stronger"),
    "+ all three": ("confidence", "lead", "first under way", "onset seen", "set aside stronger"),
}


def case_row(dataset: str, protocol: str, trace: dict, right: bool) -> dict[str, object] | None:
    """What the trace shows of its own first place, and whether it was right."""
    t = from_json(trace)
    if not t.decision.ranking:
        return None
    ep = t.evidence_package
    first = t.decision.ranking[0][0]
    ref = reference(ep.evidence, t.symptom, ep.alert_time, ep.window)
    own = [ev for ev in ep.evidence if ev.entity == first]
    kept = max((ev.score for ev in own if elsewhere(ev, ref) is None), default=0.0)
    aside = max((ev.score for ev in ep.evidence if elsewhere(ev, ref) is not None), default=0.0)
    shipped = trace_features(trace)
    return {
        "dataset": dataset,
        "protocol": protocol,
        "right": right,
        "confidence": math.log(max(shipped.confidence, 1e-3)),
        "lead": shipped.margin,
        "first under way": float(bool(own) and all(ev.under_way for ev in own)),
        "onset seen": float(ref.start is not None),
        "set aside stronger": float(aside > kept),
    }


async def collect(paths: Sequence[str], protocols: Sequence[str]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    engine = build_engine("lats")
    for name in protocols:
        placement, hidden = PROTOCOLS[name]
        protocol = parse_protocol(placement, hidden, resample="60s" if name == "resampled-60s" else "")
        for path in paths:
            results = await evaluate([engine], find_cases(path), protocol=protocol, keep_traces=True)
            for r in results:
                if r.error is None and r.diagnosis.trace:
                    row = case_row(r.outcome.dataset, name, dict(r.diagnosis.trace), r.outcome.right)
                    if row is not None:
                        rows.append(row)
            print(f"{name} {path}: {len(results)} cases", file=sys.stderr)
    return rows


def _x(rows: Sequence[dict[str, object]], names: Sequence[str]) -> np.ndarray:
    return np.array([[1.0, *(float(r[n]) for n in names)] for r in rows])  # type: ignore[arg-type]


def _y(rows: Sequence[dict[str, object]]) -> np.ndarray:
    return np.array([1.0 if r["right"] else 0.0 for r in rows])


def _p(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ w)))


def fit_report(rows: Sequence[dict[str, object]]) -> str:
    lines = []
    sets = sorted({str(r["dataset"]) for r in rows})
    for label, names in FEATURE_SETS.items():
        w_in = logistic(_x(rows, names), _y(rows))
        left = {s: logistic(_x(o, names), _y(o)) for s in sets if (o := [r for r in rows if r["dataset"] != s])}
        groups: dict[tuple[str, str], list[dict[str, object]]] = defaultdict(list)
        for r in rows:
            groups[(str(r["dataset"]), str(r["protocol"]))].append(r)
        head = f"{'set':<24} {'protocol':<14} {'cases':>5} {'AC@1':>5} {'in p':>5} {'in ECE':>6} {'out p':>5} {'out ECE':>7}"
        lines += [f"{label}: weights in {np.round(w_in, 2).tolist()}", head, "-" * len(head)]
        eces_in, eces_out = [], []
        for (dataset, protocol), g in sorted(groups.items()):
            x, y = _x(g, names), _y(g)
            p_in = _p(w_in, x)
            p_out = _p(left[dataset], x) if dataset in left else p_in
            e_in = expected_calibration_error(p_in.tolist(), y.astype(bool).tolist())
            e_out = expected_calibration_error(p_out.tolist(), y.astype(bool).tolist())
            eces_in.append(e_in)
            eces_out.append(e_out)
            lines.append(
                f"{dataset:<24} {protocol:<14} {len(g):>5} {y.mean():>5.3f} {p_in.mean():>5.3f} {e_in:>6.3f} "
                f"{p_out.mean():>5.3f} {e_out:>7.3f}"
            )
        lines += [
            f"ECE in: mean {np.mean(eces_in):.3f}, worst {max(eces_in):.3f}; left out: mean {np.mean(eces_out):.3f}, "
            f"worst {max(eces_out):.3f}; groups at or under 0.10 in {sum(e <= 0.10 for e in eces_in)}, "
            f"left out {sum(e <= 0.10 for e in eces_out)} of {len(eces_in)}",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="development sets to run lats on")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--rows", type=Path, help="write the cases' rows here")
    parser.add_argument("--fit", nargs="+", type=Path, help="fit on these rows files and print the report")
    args = parser.parse_args()
    if args.fit:
        rows = [r for path in args.fit for r in json.loads(path.read_text())]
        print(fit_report(rows))
        return 0
    if not args.paths or args.rows is None:
        parser.error("give the sets to run and --rows, or --fit ROWS.json")
    unknown = [p for p in args.protocols.split(",") if p not in PROTOCOLS]
    if unknown:
        parser.error(f"unknown protocol(s) {', '.join(unknown)}; known: {', '.join(PROTOCOLS)}")
    rows = asyncio.run(collect(args.paths, args.protocols.split(",")))
    args.rows.write_text(json.dumps(rows))
    print(f"wrote {len(rows)} rows to {args.rows}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
