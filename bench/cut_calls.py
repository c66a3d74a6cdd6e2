"""Did a fault on a service's calls out fail any of them?

A retry storm cuts a service's calls out at 50 ms, a config push at 20 ms; where the callees
answer well within that, no call is cut and the fault changes nothing its telemetry could show.
For each labelled fault of a lab recording (`lab-fault_list.json`: when, where, how long), this
counts the labelled service's calls to other services in the fault's own interval and in the
six minutes before it, how many failed, and how long the callees took to
answer them, straight from the recording's spans: no engine run.

usage: python -m bench.cut_calls LAB [LAB ...] [--types retry_storm_overload,config_change]
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.late_ended import length_of, lengths
from rca.sources.datasets import find_cases
from rca.sources.protocols import SpanQuery
from rca.telemetry import SpanStatus, SpanTable, Window

_BEFORE = 360.0  # seconds before the fault read


@dataclass(frozen=True, slots=True)
class Calls:
    """A service's calls out over a stretch: how many, how many failed, the callees' answer times."""

    calls: int
    failed: int
    p50_ms: float
    p90_ms: float

    def __str__(self) -> str:
        return f"{self.failed} of {self.calls} failed, answered p50 {self.p50_ms:.1f} ms p90 {self.p90_ms:.1f} ms"


def calls_out(spans: SpanTable, service: str) -> Calls:
    """The service's calls to other services among the spans (its client spans with a remote child)."""
    child, parent = spans.parent_pairs()
    out = (spans.entity[child] != spans.entity[parent]) & (spans.entity[parent] == service)
    c, p = child[out], parent[out]
    took = (spans.end[c] - spans.start[c]) * 1e3
    p50, p90 = (float(v) for v in np.percentile(took, [50, 90])) if took.size else (float("nan"), float("nan"))
    return Calls(int(p.size), int((spans.status[p] == SpanStatus.ERROR).sum()), p50, p90)


async def faults(root: Path, types: frozenset[str]) -> list[tuple[str, str, str, Calls, Calls]]:
    """Per labelled fault of these types: case, service, type, its calls out before and during."""
    ran = lengths(root)
    rows = []
    for case in find_cases(root):
        start, label = case.label.start, case.label
        length = length_of(ran, label.service, start)
        traces = case.incident.sources.traces
        if start is None or length is None or traces is None or (types and label.raw_type not in types):
            continue
        before, during = Window(start - _BEFORE, start), Window(start, start + length)
        spans = [SpanTable.of(await traces.spans(SpanQuery(w))) for w in (before, during)]
        rows.append(
            (
                str(case.id),
                label.service,
                label.raw_type,
                calls_out(spans[0], label.service),
                calls_out(spans[1], label.service),
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--types", default="retry_storm_overload,config_change", help="label types ('' for all)")
    args = parser.parse_args()
    types = frozenset(t for t in args.types.split(",") if t)
    for root in args.paths:
        for case, service, kind, before, during in asyncio.run(faults(root, types)):
            print(f"{case} {service} {kind}: during {during} | before {before}")


if __name__ == "__main__":
    main()
