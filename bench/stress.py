"""Is a service whose own resource series shift far more than anything else ranked first?

The held-out check (issue 22) found lats putting an entry service or a cache first on
resource-stress faults, where the faulty service's own CPU and memory shift massively and a
plain robust score (BARO) is right every time. This plants such a fault into the real
incidents of the given folders and asks each engine where it puts it.

For every case (under the realistic protocol, modalities hidden as `--hide` says) one service
is drawn, seeded by the case id: one with a CPU or memory series of its own, neither the
symptom nor the labelled root (the real fault stays in the data and competes). From a time
1-5 minutes before the window's end (as the realistic protocol places a fault's start), every
CPU and memory series of that service rises by D of its own robust deviations (1.4826 MAD of
its values before that time; their standard deviation where the MAD is 0), for each D of
`--shifts`. The planted service is the answer. Printed per dataset and D: AC@1 of each engine
(the planted service first), beside it the share where neither the planted service nor the
real fault's is first (what distracted it), and the share of BARO's right answers that lats
keeps (the issue: "it does not lose the cases a plain robust score gets").

usage: python -m bench.stress PATH [PATH ...] [--engines lats,linear-multi,baro]
                              [--shifts 10,100,1000] [--hide logs,traces] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from rca.engines import build_engine
from rca.evaluation.protocols import parse_protocol
from rca.model import Incident, IncidentCase, Series
from rca.signals import Signal, is_host_metric, signal_of
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery, MetricSource

RESOURCES = (Signal.CPU, Signal.MEMORY)


def _stressable(s: Series) -> bool:
    return signal_of(s.metric) in RESOURCES and not is_host_metric(s.metric)


def robust_scale(values: np.ndarray) -> float:
    """1.4826 MAD of the finite values; their standard deviation where that is 0; else 1."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return 1.0
    mad = 1.4826 * float(np.median(np.abs(v - np.median(v))))
    return mad or float(np.std(v)) or 1.0


@dataclass(frozen=True, slots=True)
class Stressed:
    """A metric source whose `entity` has its CPU and memory series raised by `shift` of their
    own robust deviations from `since` on."""

    inner: MetricSource
    entity: str
    since: float
    shift: float

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        return [self._raised(s) if s.entity == self.entity and _stressable(s) else s
                for s in await self.inner.series(query)]  # fmt: skip

    def _raised(self, s: Series) -> Series:
        after = s.timestamps >= self.since
        if not after.any():
            return s
        before = s.values[~after]
        values = s.values.astype(float).copy()
        values[after] += self.shift * robust_scale(before if before.size else s.values)
        return replace(s, values=values)


async def planted(case: IncidentCase, incident: Incident) -> tuple[str, float] | None:
    """The service to stress and when its stress begins (None: no service qualifies)."""
    metrics = incident.sources.metrics
    if metrics is None:
        return None
    rng = random.Random(hashlib.sha256(case.id.encode()).digest())
    window = incident.window
    own = sorted({s.entity for s in await metrics.series(MetricQuery(window)) if _stressable(s)}
                 - {incident.symptom, case.label.service})  # fmt: skip
    if not own:
        return None
    return rng.choice(own), window.end - rng.uniform(60.0, 300.0)


@dataclass(frozen=True, slots=True)
class Outcome:
    dataset: str
    case: str
    shift: float
    engine: str
    planted: str
    root: str  # the labelled fault's service, still in the data
    first: str | None


async def run(cases: list[IncidentCase], engines: list[str], shifts: list[float], hide: str) -> list[Outcome]:
    protocol = parse_protocol("realistic", hide)
    built = [build_engine(name) for name in engines]
    out: list[Outcome] = []
    started = time.perf_counter()
    for i, case in enumerate(cases, start=1):
        incident = await protocol.place(case)
        plant = await planted(case, incident)
        if plant is not None and incident.sources.metrics is not None:
            entity, since = plant
            for shift in shifts:
                stressed = Stressed(incident.sources.metrics, entity, since, shift)
                inc = replace(incident, sources=replace(incident.sources, metrics=stressed))
                for name, engine in zip(engines, built, strict=True):
                    ranking = (await engine.investigate(inc)).ranking
                    out.append(Outcome(incident.dataset, str(case.id), shift, name, entity, case.label.service,
                                       ranking[0].service if ranking else None))  # fmt: skip
        print(f"\rcase {i}/{len(cases)} ({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def render(outcomes: list[Outcome], engines: list[str]) -> str:
    """Per dataset and D: each engine's share with the planted service first, and with neither
    it nor the real fault's service first (what distracted it); lats's share of BARO's right."""
    first: dict[tuple[str, float, str], dict[str, Outcome]] = defaultdict(dict)
    for o in outcomes:
        for dataset in (o.dataset, "all"):
            first[(dataset, o.shift, o.engine)][o.case] = o
    head = f"{'dataset':<22} {'D':>6} {'cases':>5} " + " ".join(f"{e + ' (neither)':>22}" for e in engines)
    kept = "baro" in engines and "lats" in engines
    lines = [head + (f" {'lats keeps of baro':>19}" if kept else ""), "-" * (len(head) + (20 if kept else 0))]
    for dataset, shift in sorted({(d, s) for d, s, _ in first}, key=lambda k: (k[0] == "all", k[0], k[1])):
        cols = [first[(dataset, shift, e)] for e in engines]
        n = len(cols[0])
        cells = []
        for col in cols:
            planted = sum(o.first == o.planted for o in col.values()) / n
            neither = sum(o.first not in (o.planted, o.root) for o in col.values()) / n
            cells.append(f"{planted:.3f} ({neither:.3f})")
        line = f"{dataset:<22} {shift:>6g} {n:>5} " + " ".join(f"{c:>22}" for c in cells)
        if kept:
            baro, lats = first[(dataset, shift, "baro")], first[(dataset, shift, "lats")]
            won = [c for c, o in baro.items() if o.first == o.planted]
            line += (f" {sum(lats[c].first == lats[c].planted for c in won) / len(won):>19.3f}" if won
                     else f" {'-':>19}")  # fmt: skip
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.stress", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--engines", default="lats,linear-multi,baro")
    p.add_argument("--shifts", default="10,100,1000", help="comma-separated: robust deviations the stress adds")
    p.add_argument("--hide", default="", help="as for rcabot eval: logs, traces (read as absent)")
    p.add_argument("--json", type=Path, dest="json_out")
    args = p.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    shifts = [float(s) for s in args.shifts.split(",") if s.strip()]
    cases = [c for path in args.paths for c in find_cases(path)]
    outcomes = asyncio.run(run(cases, engines, shifts, args.hide))
    print(f"protocol: realistic{'; hidden: ' + args.hide if args.hide else ''}; "
          f"a planted CPU and memory stress of D robust deviations, 1-5 min before the window's end")  # fmt: skip
    print(render(outcomes, engines))
    if args.json_out:
        args.json_out.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
