"""How visible each labelled fault is in a recording's metrics: for every incident, each
service's largest robust deviation over the fault's first minutes against the five minutes
before it, and the rank of the labelled service among them. A fault whose service is not the
one that moved most cannot be put first by its own metrics alone (a ceiling, counted from the
files, not from any engine).

    python -m bench.visible .lab/r1            # per incident, then the share ranked first
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from pathlib import Path

import numpy as np

from rca.evidence.metrics import robust_z
from rca.model import IncidentCase
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery
from rca.telemetry import Window

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path", type=Path)
    args = p.parse_args()
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
