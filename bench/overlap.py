"""How many windows of a protocol hold the start of the next labelled fault as well?

Where a dataset's faults follow each other within minutes, a window placed well after a
fault's start (the `late` protocol) often holds the next fault's start too: it then asks about
two incidents, and the label names only the earlier one. This counts, per dataset, the cases
whose window (as the protocol places it) reaches the next labelled fault's start, from the
labels alone (no engine runs), and, given an `rcabot eval --json` result of that protocol,
how many of each kind lats got right.

usage: python -m bench.overlap PATH [PATH ...] [--protocol late] [--results EVAL.json ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from pathlib import Path

from rca.evaluation.protocols import parse_protocol
from rca.model import IncidentCase
from rca.sources.datasets import find_cases


async def reaching(cases: list[IncidentCase], protocol: str) -> dict[str, bool]:
    """Per case id: whether its window reaches the start of the next fault of its dataset."""
    placing = parse_protocol(protocol)
    starts: dict[str, list[float]] = defaultdict(list)
    for c in cases:
        if c.label.start is not None:
            starts[c.incident.dataset].append(c.label.start)
    out = {}
    for c in cases:
        if c.label.start is None:
            continue
        window = (await placing.place(c)).window
        later = [s for s in starts[c.incident.dataset] if s > c.label.start]
        out[str(c.id)] = bool(later) and min(later) < window.end
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.overlap", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--protocol", default="late")
    p.add_argument(
        "--results",
        nargs="*",
        type=Path,
        default=[],
        help="rcabot eval --json results of that protocol",
    )
    args = p.parse_args(argv)
    cases = [c for path in args.paths for c in find_cases(path)]
    reach = asyncio.run(reaching(cases, args.protocol))
    right: dict[str, bool] = {}
    for path in args.results:
        for r in json.loads(path.read_text())["cases"]:
            if r["engine"] == "lats":
                right[r["case_id"]] = (
                    bool(r["ranking"]) and r["ranking"][0]["service"] == r["truth"]["service"]
                )
    by_set: dict[str, list[str]] = defaultdict(list)
    for c in cases:
        if str(c.id) in reach:
            by_set[c.incident.dataset].append(str(c.id))
    print(f"protocol: {args.protocol}")
    print(
        f"{'dataset':<22} {'cases':>5} {'reach next':>10} {'right there':>11} {'clean':>5} {'right there':>11}"
    )
    for dataset, ids in sorted(by_set.items()):
        hit = [i for i in ids if reach[i]]
        clean = [i for i in ids if not reach[i]]

        def rights(group: list[str]) -> str:
            return f"{sum(right.get(i, False) for i in group)}" if right else "-"

        print(
            f"{dataset:<22} {len(ids):>5} {len(hit):>10} {rights(hit):>11} {len(clean):>5} {rights(clean):>11}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
