"""How often first places are right at each lead over the second, per dataset.

The shipped calibration (rca.calibration) reads what every ranking has: the first place's
confidence and its lead over the second. Where two datasets are right at very different rates
at the same lead, no model of those features is calibrated on both; this counts it from
`rcabot eval --json` results (every protocol given, `late` left out unless asked).

usage: python -m bench.leads EVAL.json [EVAL.json ...] [--engine lats] [--with-late]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rca.evaluation.report import calibration_rows

EDGES = (0.0, 0.01, 0.2, 0.4, 0.6, 0.8, 1.01)  # a tie (under 0.01), then fifths of the confidence


def by_lead(
    evaluations: Sequence[dict], engine: str = "lats", *, late: bool = False
) -> dict[str, list[tuple[int, int]]]:
    """Per dataset, per lead bin (EDGES): (first places, right ones)."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(lambda: [(0, 0)] * (len(EDGES) - 1))
    for evaluation in evaluations:
        for dataset, protocol, f, right in calibration_rows(evaluation, engine):
            if protocol == "late" and not late:
                continue
            b = next(i for i in range(len(EDGES) - 1) if EDGES[i] <= f.margin < EDGES[i + 1])
            n, k = out[dataset][b]
            out[dataset][b] = (n + 1, k + int(right))
    return dict(out)


def render(counts: dict[str, list[tuple[int, int]]]) -> str:
    sets = sorted(counts)
    head = f"{'lead':<11}" + "".join(f" {s[:20]:>20} {'right':>6}" for s in sets)
    lines = [head, "-" * len(head)]
    for b in range(len(EDGES) - 1):
        label = "a tie" if b == 0 else f"{EDGES[b]:.2f}-{min(EDGES[b + 1], 1.0):.2f}"
        cells = "".join(
            f" {counts[s][b][0]:>20} "
            + (f"{counts[s][b][1] / counts[s][b][0]:>6.2f}" if counts[s][b][0] else f"{'-':>6}")
            for s in sets
        )
        lines.append(f"{label:<11}{cells}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.leads", description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--engine", default="lats")
    p.add_argument("--with-late", action="store_true", help="count the late protocol too")
    args = p.parse_args(argv)
    evaluations = [json.loads(path.read_text()) for path in args.results]
    print(render(by_lead(evaluations, args.engine, late=args.with_late)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
