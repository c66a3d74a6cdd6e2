"""Is a service whose own series shift far more than anything else ranked first?

The held-out check (issue 22) found lats putting an entry service or a cache first on
resource-stress faults, where the faulty service's own CPU and memory shift massively and a
plain robust score (BARO) is right every time. This plants such a fault into the real
incidents of the given folders and asks each engine where it puts it.

For every case (placed by `--protocol`, recorded as `--resample`, `--vocabulary`, `--fleet` and
`--hide` say, as `rcabot eval` does) one service is drawn, seeded by the case id: one with a
series of the planted family of its own, neither the symptom nor the labelled root (the real
fault stays in the data and competes). From a time where the protocol places a fault's start
(realistic and centred: 1-5 minutes before the window's end; late: 1-10 minutes before the
window begins; cropped: up to 5 minutes before the recording begins, so it is under way in
every sample), every series of that family of that service moves the bad way by D of its own
robust deviations (1.4826 MAD of its values before that time; their standard deviation where
the MAD is 0), for each D of `--shifts`. The plant is made in the telemetry as recorded at
its own step, before any resampling, renaming or fleet (a fault happens to the service, not
to its exporter). Families (`--families`): resource (CPU and memory together, a stress-ng
hog), cpu, memory, disk, latency, errors. The planted service is the answer. Printed per
dataset, family and D: AC@1 of each engine (the planted service first), beside it the share
where neither the planted service nor the real fault's is first (what distracted it), and the
share of BARO's right answers that lats keeps.

usage: python -m bench.stress PATH [PATH ...] [--engines lats,linear-multi,baro]
                              [--shifts 10,100,1000] [--families resource] [--protocol realistic]
                              [--resample 5s] [--vocabulary otel] [--fleet 200]
                              [--hide logs,traces] [--json OUT]
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
from rca.evaluation.protocols import Placement, Protocol, parse_protocol
from rca.model import Incident, IncidentCase, Series
from rca.signals import Signal, bad_direction, is_host_metric, signal_of
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery, MetricSource

FAMILIES: dict[str, frozenset[Signal]] = {
    "resource": frozenset({Signal.CPU, Signal.MEMORY}),
    "cpu": frozenset({Signal.CPU}),
    "memory": frozenset({Signal.MEMORY}),
    "disk": frozenset({Signal.DISK}),
    "latency": frozenset({Signal.LATENCY}),
    "errors": frozenset({Signal.ERRORS}),
}
RESOURCES = FAMILIES["resource"]


def _stressable(s: Series, family: frozenset[Signal] = RESOURCES) -> bool:
    return signal_of(s.metric) in family and not is_host_metric(s.metric)


def robust_scale(values: np.ndarray) -> float:
    """1.4826 MAD of the finite values; their standard deviation where that is 0; else 1."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return 1.0
    mad = 1.4826 * float(np.median(np.abs(v - np.median(v))))
    return mad or float(np.std(v)) or 1.0


@dataclass(frozen=True, slots=True)
class Stressed:
    """A metric source whose `entity` has its series of a family (CPU and memory by default)
    moved the bad way by `shift` of their own robust deviations from `since` on."""

    inner: MetricSource
    entity: str
    since: float
    shift: float
    family: frozenset[Signal] = RESOURCES

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        return [self._raised(s) if s.entity == self.entity and _stressable(s, self.family) else s
                for s in await self.inner.series(query)]  # fmt: skip

    def _raised(self, s: Series) -> Series:
        after = s.timestamps >= self.since
        if not after.any():
            return s
        before = s.values[~after]
        values = s.values.astype(float).copy()
        values[after] += (
            bad_direction(s.metric) * self.shift * robust_scale(before if before.size else s.values)
        )
        return replace(s, values=values)


async def planted(case: IncidentCase, incident: Incident, family: frozenset[Signal] = RESOURCES,
                  placement: Placement = Placement.REALISTIC) -> tuple[str, float] | None:  # fmt: skip
    """The service to stress and when its stress begins (None: no service qualifies)."""
    metrics = incident.sources.metrics
    if metrics is None:
        return None
    rng = random.Random(hashlib.sha256(case.id.encode()).digest())
    window = incident.window
    own = sorted({s.entity for s in await metrics.series(MetricQuery(window)) if _stressable(s, family)}
                 - {incident.symptom, case.label.service})  # fmt: skip
    if not own:
        return None
    entity = rng.choice(own)
    if placement is Placement.LATE:
        return entity, window.start - rng.uniform(60.0, 600.0)
    if placement is Placement.CROPPED and case.label.start is not None:
        return entity, case.label.start - rng.uniform(0.0, 300.0)
    return entity, window.end - rng.uniform(60.0, 300.0)


@dataclass(frozen=True, slots=True)
class Outcome:
    dataset: str
    case: str
    family: str
    shift: float
    engine: str
    planted: str
    root: str  # the labelled fault's service, still in the data
    first: str | None


async def run(cases: list[IncidentCase], engines: list[str], shifts: list[float], protocol: Protocol,
              families: list[str]) -> list[Outcome]:  # fmt: skip
    placing = replace(
        protocol, hide=frozenset(), step=None, vocabulary=None, fleet=0
    )  # the placement alone
    built = [build_engine(name) for name in engines]
    out: list[Outcome] = []
    started = time.perf_counter()
    for i, case in enumerate(cases, start=1):
        incident = await placing.place(case)
        for family in families:
            plant = await planted(case, incident, FAMILIES[family], protocol.placement)
            if plant is None or incident.sources.metrics is None:
                continue
            entity, since = plant
            for shift in shifts:
                stressed = Stressed(
                    incident.sources.metrics, entity, since, shift, FAMILIES[family]
                )
                inc = protocol.record(
                    replace(incident, sources=replace(incident.sources, metrics=stressed))
                )
                for name, engine in zip(engines, built, strict=True):
                    ranking = (await engine.investigate(inc)).ranking
                    out.append(Outcome(incident.dataset, str(case.id), family, shift, name, entity,
                                       case.label.service, ranking[0].service if ranking else None))  # fmt: skip
        print(
            f"\rcase {i}/{len(cases)} ({time.perf_counter() - started:.0f} s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    return out


def render(outcomes: list[Outcome], engines: list[str]) -> str:
    """Per dataset and D: each engine's share with the planted service first, and with neither
    it nor the real fault's service first (what distracted it); lats's share of BARO's right."""
    first: dict[tuple[str, str, float, str], dict[str, Outcome]] = defaultdict(dict)
    for o in outcomes:
        for dataset in (o.dataset, "all"):
            first[(dataset, o.family, o.shift, o.engine)][o.case] = o
    head = f"{'dataset':<22} {'family':<9} {'D':>6} {'cases':>5} " + " ".join(
        f"{e + ' (neither)':>22}" for e in engines
    )
    kept = "baro" in engines and "lats" in engines
    lines = [
        head + (f" {'lats keeps of baro':>19}" if kept else ""),
        "-" * (len(head) + (20 if kept else 0)),
    ]
    for dataset, family, shift in sorted({(d, f, s) for d, f, s, _ in first},
                                         key=lambda k: (k[0] == "all", k[0], k[1], k[2])):  # fmt: skip
        cols = [first[(dataset, family, shift, e)] for e in engines]
        n = len(cols[0])
        cells = []
        for col in cols:
            planted = sum(o.first == o.planted for o in col.values()) / n
            neither = sum(o.first not in (o.planted, o.root) for o in col.values()) / n
            cells.append(f"{planted:.3f} ({neither:.3f})")
        line = f"{dataset:<22} {family:<9} {shift:>6g} {n:>5} " + " ".join(
            f"{c:>22}" for c in cells
        )
        if kept:
            baro, lats = (
                first[(dataset, family, shift, "baro")],
                first[(dataset, family, shift, "lats")],
            )
            won = [c for c, o in baro.items() if o.first == o.planted]
            line += (f" {sum(lats[c].first == lats[c].planted for c in won) / len(won):>19.3f}" if won
                     else f" {'-':>19}")  # fmt: skip
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.stress", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--engines", default="lats,linear-multi,baro")
    p.add_argument(
        "--shifts", default="10,100,1000", help="comma-separated: robust deviations the stress adds"
    )
    p.add_argument("--families", default="resource", help=f"comma-separated: {', '.join(FAMILIES)}")
    p.add_argument(
        "--protocol",
        default="realistic",
        help="as for rcabot eval: realistic, centred, late, cropped",
    )
    p.add_argument(
        "--resample", default="", help="as for rcabot eval: metrics resampled to this step"
    )
    p.add_argument("--vocabulary", default="", help="as for rcabot eval: cadvisor, otel or short")
    p.add_argument("--fleet", type=int, default=0, help="as for rcabot eval: N idle services")
    p.add_argument("--hide", default="", help="as for rcabot eval: logs, traces (read as absent)")
    p.add_argument("--json", type=Path, dest="json_out")
    args = p.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    shifts = [float(s) for s in args.shifts.split(",") if s.strip()]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        p.error(f"unknown families {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    protocol = parse_protocol(args.protocol, args.hide, resample=args.resample, vocabulary=args.vocabulary,
                              fleet=args.fleet)  # fmt: skip
    cases = [c for path in args.paths for c in find_cases(path)]
    outcomes = asyncio.run(run(cases, engines, shifts, protocol, families))
    print(
        f"protocol: {protocol.name}; a planted fault of D robust deviations in one service's own series"
    )
    print(render(outcomes, engines))
    if args.json_out:
        args.json_out.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
