"""How many late windows open after their fault had already ended?

A lab recording's labels (`lab-fault_list.json`) say how long each fault ran (`seconds`). The
`late` protocol opens its window 1-10 minutes after the fault began; where the fault ran
shorter than that, the window holds only its aftermath (and often the next fault). This counts
them from the labels and the protocol's own placement, no engine run.

usage: python -m bench.late_ended LAB [LAB ...] [--protocol late]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from rca.evaluation.protocols import parse_protocol
from rca.sources.datasets import find_cases

_SAME_FAULT = 5.0  # seconds between a label's start and the fault list's inject time


def lengths(root: Path) -> dict[tuple[str, float], float]:
    """Every fault of a lab recording: (its service, its inject time) and how long it ran. The
    shops of one recording inject at the same instants, so the time alone does not say which."""
    out = {}
    for path in root.rglob("lab-fault_list.json"):
        for faults in json.loads(path.read_text()).values():
            for fault in faults:
                service = str(fault["inject_pod"]).rsplit("-", 1)[0]
                out[(service, float(fault["inject_timestamp"]))] = float(fault["seconds"])
    return out


def length_of(ran: dict[tuple[str, float], float], service: str, start: float | None) -> float | None:
    """How long the labelled fault of this service begun at `start` ran, from `lengths`."""
    if start is None:
        return None
    return next((s for (svc, t), s in ran.items() if svc == service and abs(t - start) <= _SAME_FAULT), None)


async def count(root: Path, protocol: str) -> tuple[int, int]:
    """(windows placed, windows opening after their fault ended)."""
    placing, ran = parse_protocol(protocol), lengths(root)
    placed = ended = 0
    for case in find_cases(root):
        start = case.label.start
        length = length_of(ran, case.label.service, start)
        if start is None or length is None:
            continue
        placed += 1
        ended += (await placing.place(case)).window.start >= start + length
    return placed, ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--protocol", default="late")
    args = parser.parse_args()
    for root in args.paths:
        placed, ended = asyncio.run(count(root, args.protocol))
        print(f"{root.name}: {placed} {args.protocol} windows, {ended} open after their fault ended")


if __name__ == "__main__":
    main()
