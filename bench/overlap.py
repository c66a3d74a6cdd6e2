"""How many windows of a protocol hold the start of the next labelled fault as well?

Where a dataset's faults follow each other within minutes, a window placed well after a
fault's start (the `late` protocol) often holds the next fault's start too: it then asks about
two incidents, and the label names only the earlier one. This counts, per dataset, the cases
whose window (as the protocol places it) reaches the next labelled fault's start, from the
labels alone (no engine runs), and, given an `rcabot eval --json` result of that protocol,
how many of each kind lats got right, how many of its wrong first places name the service of
another labelled fault that began inside the window (an incident the window does hold), and
the same for the verdicts it would call "likely". Where the labels say how long each fault ran
(a lab recording's `seconds`), it also counts the cases that began while the previous fault of
their dataset still ran (two incidents going at once in any window that holds both starts), and
how many of those lats got right.

usage: python -m bench.overlap PATH [PATH ...] [--protocol late] [--results EVAL.json ...]
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from bench.late_ended import length_of, lengths
from rca.evaluation.protocols import parse_protocol
from rca.evaluation.results import read, saved_outcome
from rca.model import IncidentCase
from rca.sources.datasets import find_cases


async def reaching(cases: list[IncidentCase], protocol: str) -> dict[str, bool]:
    """Per case id: whether its window reaches the start of the next fault of its dataset."""
    return {i: reach for i, (reach, _) in (await held(cases, protocol)).items()}


def labelled_starts(cases: Sequence[IncidentCase]) -> dict[str, list[tuple[float, str, str]]]:
    """Per dataset: (start, service, case id) of each labelled fault with a start."""
    starts: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for c in cases:
        if c.label.start is not None:
            starts[c.incident.dataset].append((c.label.start, c.label.service, str(c.id)))
    return starts


async def held(cases: list[IncidentCase], protocol: str) -> dict[str, tuple[bool, frozenset[str]]]:
    """Per case id: whether its window reaches the start of the next fault of its dataset, and
    the services of the other labelled faults that began inside it."""
    placing = parse_protocol(protocol)
    starts = labelled_starts(cases)
    out = {}
    for c in cases:
        if c.label.start is None:
            continue
        window = (await placing.place(c)).window
        faults = starts[c.incident.dataset]
        later = [s for s, _, _ in faults if s > c.label.start]
        inside = frozenset(svc for s, svc, i in faults if i != str(c.id) and window.start <= s <= window.end)
        out[str(c.id)] = (bool(later) and min(later) < window.end, inside)
    return out


def still_running(cases: list[IncidentCase], ran: dict[tuple[str, float], float]) -> dict[str, bool]:
    """Per case id whose dataset's labels say how long its faults ran: whether the previous
    labelled fault of its dataset was still running when it began."""
    starts: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for c in cases:
        if c.label.start is not None:
            starts[c.incident.dataset].append((c.label.start, c.label.service))
    out = {}
    for c in cases:
        if c.label.start is None or length_of(ran, c.label.service, c.label.start) is None:
            continue
        before = [(s, svc) for s, svc in starts[c.incident.dataset] if s < c.label.start]
        if not before:
            out[str(c.id)] = False
            continue
        start, service = max(before)
        length = length_of(ran, service, start)
        out[str(c.id)] = length is not None and start + length > c.label.start
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
    holding = asyncio.run(held(cases, args.protocol))
    reach = {i: r for i, (r, _) in holding.items()}
    right: dict[str, bool] = {}
    other: dict[str, bool] = {}  # a wrong first place naming a fault begun in the window
    likely: dict[str, bool] = {}
    for path in args.results:
        for r in read(path)["cases"]:
            o = saved_outcome(r)  # read as the results page reads it
            if o.engine == "lats" and o.case_id in holding:
                right[o.case_id] = o.right
                other[o.case_id] = not o.right and bool(o.ranked) and o.ranked[0] in holding[o.case_id][1]
                likely[o.case_id] = bool(r.get("likely"))
    by_set: dict[str, list[str]] = defaultdict(list)
    for c in cases:
        if str(c.id) in reach:
            by_set[c.incident.dataset].append(str(c.id))
    print(f"protocol: {args.protocol}")
    print(f"{'dataset':<22} {'cases':>5} {'reach next':>10} {'right there':>11} {'clean':>5} {'right there':>11}")
    for dataset, ids in sorted(by_set.items()):
        hit = [i for i in ids if reach[i]]
        clean = [i for i in ids if not reach[i]]

        def rights(group: list[str]) -> str:
            return f"{sum(right.get(i, False) for i in group)}" if right else "-"

        print(f"{dataset:<22} {len(ids):>5} {len(hit):>10} {rights(hit):>11} {len(clean):>5} {rights(clean):>11}")
    running = still_running(cases, {k: v for path in args.paths for k, v in lengths(path).items()})
    if running:
        print(
            f"\n{'dataset':<22} {'timed':>5} {'began while the previous ran':>28} {'right there':>11} {'right else':>10}"
        )

        def share(group: list[str]) -> str:
            return f"{sum(right.get(i, False) for i in group)}/{len(group)}" if right else "-"

        for dataset, ids in sorted(by_set.items()):
            timed = [i for i in ids if i in running]
            both = [i for i in timed if running[i]]
            alone = [i for i in timed if not running[i]]
            print(f"{dataset:<22} {len(timed):>5} {len(both):>28} {share(both):>11} {share(alone):>10}")
        both = [i for i, on in running.items() if on]
        alone = [i for i, on in running.items() if not on]
        print(f"{'all':<22} {len(running):>5} {len(both):>28} {share(both):>11} {share(alone):>10}")
    if right:
        print(
            f"\n{'dataset':<22} {'wrong':>5} {'naming a fault begun inside':>28} {'likely':>6} {'right':>5} "
            f"{'wrong naming one':>16}"
        )
        for dataset, ids in sorted(by_set.items()):
            wrong = [i for i in ids if i in right and not right[i]]
            said = [i for i in ids if likely.get(i)]
            print(
                f"{dataset:<22} {len(wrong):>5} {sum(other[i] for i in wrong):>28} {len(said):>6} "
                f"{sum(right[i] for i in said):>5} {sum(other[i] for i in said):>16}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
