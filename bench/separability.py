"""How well what a saved ranking carries tells a right first place from a wrong one.

The shipped calibration (rca.calibration) reads the first place's confidence and its lead. A
calibration can be no sharper than its features: this fits the same logistic model on those and
on each further reading a saved case carries (the ranking's length, how evenly its scores
spread, the share of the window the metrics cover, the normal behaviour the case lacked, the
asked-late note, a tie at the top), leaving each set out in turn, and prints the AUROC of the
left-out probabilities for a right first place, pooled over every case.

usage: python -m bench.separability results [--engine lats]
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from rca.calibration import case_features, logistic
from rca.evaluation.metrics import separation
from rca.evaluation.results import saved

Case = Mapping[str, object]
_COVER = re.compile(r"\((\d+) of (\d+) min\)")


def _missing(case: Case) -> str:
    return " ".join(str(m) for m in case.get("missing") or [])  # type: ignore[attr-defined]


def _scores(case: Case) -> list[float]:
    return [float(r["score"]) for r in case.get("ranking") or []]  # type: ignore[attr-defined, index]


def _spread(case: Case) -> float:
    """How evenly the ranking's scores spread: their entropy over its most (1: all alike)."""
    s = np.array(_scores(case))
    if s.size < 2 or s.sum() <= 0:
        return 0.0
    q = s / s.sum()
    return float(-(q * np.log(q + 1e-12)).sum() / math.log(s.size))


def _covered(case: Case) -> float:
    m = _COVER.search(_missing(case))
    return int(m.group(1)) / max(int(m.group(2)), 1) if m else 1.0


READINGS: dict[str, Callable[[Case], float]] = {
    "length": lambda c: math.log(max(len(_scores(c)), 1)),
    "spread": _spread,
    "coverage": _covered,
    "normals": lambda c: float(sum(f"normal {m}" in _missing(c) for m in ("metrics", "logs", "traces"))),
    "late": lambda c: float("asked late" in _missing(c)),
    "tie": lambda c: float(int(str(c.get("tied_first", 1))) > 1),
}


def cases(root: Path, engine: str = "lats") -> list[tuple[str, Case, bool]]:
    """(set, case, right?) for every saved case of `engine` with a ranking."""
    out = []
    for name, evaluation in saved(root):
        for case in evaluation["cases"]:
            if case.get("engine") == engine and case.get("ranking") and not case.get("error"):
                out.append((name, case, case["ranking"][0]["service"] == case["truth"]["service"]))
    return out


def left_out_auroc(rows: Sequence[tuple[str, Case, bool]], readings: Sequence[str] = ()) -> float | None:
    """The AUROC, pooled, of the probability of a right first place from a logistic model of
    the shipped features and `readings`, each set's cases scored by a fit on the other sets."""
    x = np.array([[*case_features(c).vector(), *(READINGS[r](c) for r in readings)] for _, c, _ in rows])
    y = np.array([1.0 if ok else 0.0 for *_, ok in rows])
    sets = np.array([s for s, _, _ in rows])
    p = np.zeros(len(rows))
    for name in set(sets.tolist()):
        w = logistic(x[sets != name], y[sets != name])
        p[sets == name] = 1.0 / (1.0 + np.exp(-(x[sets == name] @ w)))
    return separation(p[y == 1].tolist(), p[y == 0].tolist())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the folder of saved evaluations (results/)")
    parser.add_argument("--engine", default="lats")
    args = parser.parse_args(argv)
    rows = cases(args.results, args.engine)
    print(f"{len(rows)} first places of {args.engine} in {len({s for s, _, _ in rows})} sets; AUROC left out by set")
    for readings in ((), *((r,) for r in READINGS), tuple(READINGS)):
        auc = left_out_auroc(rows, readings)
        label = "+".join(readings) if readings else "shipped (confidence, lead)"
        print(f"{label:<48} {'-' if auc is None else f'{auc:.3f}'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
