"""Which right first places rest on the labelled fault's own evidence?

Where a dataset faults one service several times in a row (TrainTicket and OnlineBoutique
inject two to five faults into one service minutes apart), a window that holds the previous
fault names the right service whether or not the engine saw the fault asked about. `rcabot
eval --json` saves, per case, whether the first place cites an anomaly begun at the labelled
start or after (less the onset tolerance and one sampling step: `rca.evaluation.metrics.
grounded`). This reads those files with the labels and prints, per dataset: the cases; how
many hold, inside their window, an earlier labelled fault of the same service; the right
first places; how many of them are grounded; how many are not, and of those how many name a
service faulted earlier inside the window; and AC@1 counting grounded first places only.

usage: python -m bench.grounded PATH [PATH ...] --results EVAL.json [...] [--engine lats] [--cases]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from bench.overlap import labelled_starts
from rca.evaluation.results import read, saved_outcome
from rca.model import IncidentCase
from rca.sources.datasets import find_cases
from rca.telemetry import Window
from rca.windows import parse_window


def earlier_inside(cases: Sequence[IncidentCase], windows: dict[str, Window]) -> dict[str, set[str]]:
    """Per case id: the services of the other labelled faults of its dataset begun inside its
    window before it."""
    starts = labelled_starts(cases)
    out = {}
    for c in cases:
        window = windows.get(str(c.id))
        if c.label.start is None or window is None:
            continue
        start = c.label.start
        out[str(c.id)] = {s for t, s, i in starts[c.incident.dataset] if i != str(c.id) and window.start <= t < start}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.grounded", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--results", nargs="+", type=Path, required=True, help="rcabot eval --json results (format 5 on)")
    p.add_argument("--engine", default="lats")
    p.add_argument("--cases", action="store_true", help="name the right first places that are not grounded")
    args = p.parse_args(argv)
    cases = [c for path in args.paths for c in find_cases(path)]
    saved = [c for path in args.results for c in read(path)["cases"] if c["engine"] == args.engine]
    missing = [c["case_id"] for c in saved if "grounded" not in c]
    if missing:
        p.error(f"{len(missing)} saved cases predate the grounded count (format 5): run the eval again")
    windows = {c["case_id"]: parse_window(c["window"], now=0.0) for c in saved if c.get("window")}
    earlier = earlier_inside(cases, windows)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for c in saved:
        o = saved_outcome(c)
        n, same = counts[o.dataset], o.truth_service in earlier.get(o.case_id, set())
        n["cases"] += 1
        n["same in window"] += same
        n["right"] += o.right
        n["grounded"] += o.right_grounded
        if o.right and not o.right_grounded:
            n["not grounded"] += 1
            n["of those, same earlier"] += same
            if args.cases:
                print(
                    f"  {o.case_id} {o.truth_service}{': the same service faulted earlier in the window' if same else ''}"
                )
    cols = ("cases", "same in window", "right", "grounded", "not grounded", "of those, same earlier")
    print(f"engine: {args.engine}")
    print(f"{'dataset':<22} " + " ".join(f"{c:>{len(c)}}" for c in cols) + "   AC@1  grounded AC@1")
    for dataset, n in sorted(counts.items()):
        cells = " ".join(f"{n[c]:>{len(c)}}" for c in cols)
        print(f"{dataset:<22} {cells} {n['right'] / n['cases']:>6.3f} {n['grounded'] / n['cases']:>14.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
