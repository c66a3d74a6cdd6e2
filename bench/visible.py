"""How visible each labelled fault is in a recording's metrics: for every incident, each
service's largest robust deviation over the fault's first minutes against the five minutes
before it, and the rank of the labelled service among them. A fault whose service is not the
one that moved most cannot be put first by its own metrics alone (a ceiling, counted from the
files, not from any engine).

With `--calls`, for each incident of a fault typed overload (the lab's retry storms), the calls
the labelled service sent into other services per request it served, in the five minutes
before and the fault's first two, from the spans: a retry storm that sent no more calls per
request was no storm.

    python -m bench.visible .lab/r1            # per incident, then the share ranked first
    python -m bench.visible .lab/r1 --calls    # calls per request, before and during
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from pathlib import Path

import numpy as np

from rca.evidence.metrics import robust_z
from rca.model import FaultType, IncidentCase
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery, SpanQuery
from rca.telemetry import SpanTable, Window

BEFORE = 300.0  # seconds before the injection taken as its normal
AFTER = 120.0  # seconds after it in which it must show


async def movers(case: IncidentCase) -> list[tuple[float, str, str]]:
    """(largest |robust z|, service, metric) per service, largest first."""
    incident, label = case.incident, case.label
    t = label.start
    metrics = incident.sources.metrics
    if metrics is None or t is None:
        return []
    series = await metrics.series(MetricQuery(Window(t - BEFORE, t + AFTER)))
    best: dict[str, tuple[float, str]] = {}
    for s in series:
        keep = np.isfinite(s.values)
        times, values = s.timestamps[keep], s.values[keep]
        normal, after = values[times < t], values[times >= t]
        if normal.size < 3 or after.size == 0:
            continue
        z = float(np.max(np.abs(robust_z(normal, after))))
        if z > best.get(s.entity, (-1.0, ""))[0]:
            best[s.entity] = (z, s.metric)
    return sorted(((z, e, m) for e, (z, m) in best.items()), reverse=True)


async def calls_per_request(case: IncidentCase) -> tuple[float, float] | None:
    """The calls the labelled service sent into other services per request it served, in the
    BEFORE seconds before the fault and the AFTER seconds from it; None without spans."""
    incident, label = case.incident, case.label
    t, traces = label.start, incident.sources.traces
    if traces is None or t is None:
        return None
    out = []
    for window in (Window(t - BEFORE, t), Window(t, t + AFTER)):
        table = SpanTable.of(await traces.spans(SpanQuery(window)))
        child, parent = table.parent_pairs()
        mine = table.entity == label.service
        from_elsewhere = np.ones(len(table), dtype=bool)  # a request it served: no parent of its own
        from_elsewhere[child[mine[parent]]] = False
        requests = int(np.sum(mine & from_elsewhere))
        calls = int(np.sum(mine[parent] & ~mine[child]))
        out.append(calls / requests if requests else float("nan"))
    return out[0], out[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path", type=Path)
    p.add_argument("--calls", action="store_true", help="calls per request of the services of faults typed overload")
    args = p.parse_args()
    if args.calls:
        rows = 0
        for case in find_cases(args.path):
            if case.label.fault_type is not FaultType.OVERLOAD:
                continue
            found = asyncio.run(calls_per_request(case))
            if found is None:
                continue
            rows += 1
            before, during = found
            print(f"{case.id}  {case.label.service}: {before:.2f} -> {during:.2f} calls per request")
        print(f"\n{rows} incidents of a fault typed overload with spans")
        return
    ranks: Counter[str] = Counter()
    cases = find_cases(args.path)
    for case in cases:
        ranked = asyncio.run(movers(case))
        names = [e for _, e, _ in ranked]
        rank = names.index(case.label.service) + 1 if case.label.service in names else 0
        ranks["first" if rank == 1 else "top 3" if 0 < rank <= 3 else "lower" if rank else "absent"] += 1
        top = ", ".join(f"{e} {m} {z:.0f}" for z, e, m in ranked[:3])
        print(f"{case.id}  {case.label.service} {case.label.fault_type.value}: rank {rank or '-'}  | {top}")
    n = len(cases)
    print(
        f"\n{n} incidents; the labelled service moved most in {ranks['first']} ({ranks['first'] / n:.2f}), "
        f"within the top 3 in {ranks['first'] + ranks['top 3']}, lower in {ranks['lower']}, absent in {ranks['absent']}"
    )


if __name__ == "__main__":
    main()
