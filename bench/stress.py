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
robust deviations (1.4826 MAD of its values before that time, or where fewer than three come
before it, of the normal an engine reads for it: the stretch recorded apart, under `cropped`;
their standard deviation where the MAD is 0), for each D of `--shifts`. The plant is made in the telemetry as recorded at
its own step, before any resampling, renaming or fleet (a fault happens to the service, not
to its exporter). Families (`--families`): resource (CPU and memory together, a stress-ng
hog), cpu, memory, disk, latency, errors. The planted service is the answer. Printed per
dataset, family and D: AC@1 of each engine (the planted service first), beside it the share
where neither the planted service nor the real fault's is first (what distracted it), and the
share of BARO's right answers that lats keeps.

usage: python -m bench.stress PATH [PATH ...] [--engines lats,linear-multi,baro,lats-no-rule:NAME]
                              [--shifts 10,100,1000] [--families resource] [--protocol realistic]
                              [--resample 5s] [--vocabulary otel] [--fleet 200] [--drift 0.2]
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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from rca.engines import Engine, build_engine
from rca.evaluation.protocols import Placement, Protocol, parse_protocol
from rca.model import Incident, IncidentCase, Modality
from rca.signals import Signal, bad_direction, is_host_metric, signal_of
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery, MetricSource
from rca.telemetry import Series

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
    # per series (entity, metric, instance), the values an engine reads as its normal: the scale
    # where fewer than three points come before `since` (a recording that begins at the fault)
    normals: Mapping[tuple[str, str, str], np.ndarray] = field(default_factory=dict)

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        return [
            self._raised(s) if s.entity == self.entity and _stressable(s, self.family) else s
            for s in await self.inner.series(query)
        ]

    def _raised(self, s: Series) -> Series:
        after = s.timestamps >= self.since
        if not after.any():
            return s
        values = s.values.astype(float).copy()
        values[after] += bad_direction(s.metric) * self.shift * robust_scale(reference(s, self.since, self.normals))
        return replace(s, values=values)


def reference(s: Series, since: float, normals: Mapping[tuple[str, str, str], np.ndarray]) -> np.ndarray:
    """What a series' deviations from `since` on are measured in: its finite values before
    then, or where fewer than three come before (a recording that begins at the fault) the
    normal an engine reads for it, or else all its values."""
    before = s.values[(s.timestamps < since) & np.isfinite(s.values)]
    if before.size >= 3:
        return before
    normal = normals.get((s.entity, s.metric, s.instance))
    return normal if normal is not None and normal.size else s.values[np.isfinite(s.values)]


async def normals(incident: Incident) -> dict[tuple[str, str, str], np.ndarray]:
    """Per series, the finite values an engine reads as its normal: its look-back, or where
    that holds none of it, the stretch recorded apart."""
    normal = incident.normal_for(Modality.METRICS)
    out: dict[tuple[str, str, str], np.ndarray] = {}
    if normal is None:
        return out
    for part in (normal.fault_free, normal.sources):  # the look-back wins where it has the series
        if part is None or part.metrics is None:
            continue
        for s in await part.metrics.series(MetricQuery(normal.window)):
            values = s.values[np.isfinite(s.values)]
            if values.size:
                out[(s.entity, s.metric, s.instance)] = values
    return out


async def planted(
    case: IncidentCase,
    incident: Incident,
    family: frozenset[Signal] = RESOURCES,
    placement: Placement = Placement.REALISTIC,
) -> tuple[str, float] | None:
    """The service to stress and when its stress begins (None: no service qualifies)."""
    metrics = incident.sources.metrics
    if metrics is None:
        return None
    rng = random.Random(hashlib.sha256(case.id.encode()).digest())
    window = incident.window
    own = sorted(
        {s.entity for s in await metrics.series(MetricQuery(window)) if _stressable(s, family)}
        - {incident.symptom, case.label.service}
    )
    if not own:
        return None
    entity = rng.choice(own)
    if placement is Placement.LATE:
        return entity, window.start - rng.uniform(60.0, 600.0)
    if placement is Placement.CROPPED and case.label.start is not None:
        return entity, case.label.start - rng.uniform(0.0, 300.0)
    return entity, window.end - rng.uniform(60.0, 300.0)


def deviation(s: Series, since: float, normals: Mapping[tuple[str, str, str], np.ndarray] | None = None) -> float:
    """The largest deviation the bad way of a series from `since` on, in robust deviations of
    its `reference`, as a plant is made."""
    after = s.timestamps >= since
    if not after.any():
        return 0.0
    ref = reference(s, since, normals or {})
    if ref.size == 0:
        return 0.0
    moved = bad_direction(s.metric) * (s.values[after] - float(np.median(ref))) / robust_scale(ref)
    moved = moved[np.isfinite(moved)]
    return float(moved.max()) if moved.size else 0.0


async def rival(
    incident: Incident,
    entity: str,
    since: float,
    family: frozenset[Signal],
    normal: Mapping[tuple[str, str, str], np.ndarray] | None = None,
) -> tuple[str, float]:
    """The other entity whose own series of the family moved the most, as recorded, from the
    plant's start to the window's end, and by how much (robust deviations; 0 where none)."""
    metrics = incident.sources.metrics
    assert metrics is not None
    best: tuple[str, float] = ("", 0.0)
    for s in await metrics.series(MetricQuery(incident.window)):
        if s.entity != entity and _stressable(s, family):
            d = deviation(s, since, normal)
            if d > best[1]:
                best = (s.entity, d)
    return best


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
    rival: float = 0.0  # the largest deviation of another entity's series of the family
    rival_entity: str = ""


def _build(name: str) -> Engine:
    """An engine by name, or an ablated one as `rcabot eval --ablate` names it
    (`lats-no-rule:dominance`: lats with that rule switched off)."""
    base, _, ablation = name.partition("-no-")
    return build_engine(base, ablation=ablation) if ablation else build_engine(name)


async def run(
    cases: list[IncidentCase], engines: list[str], shifts: list[float], protocol: Protocol, families: list[str]
) -> list[Outcome]:
    placing = replace(protocol, hide=frozenset(), step=None, vocabulary=None, fleet=0, drift=0.0)  # the placement alone
    built = [_build(name) for name in engines]
    out: list[Outcome] = []
    started = time.perf_counter()
    for i, case in enumerate(cases, start=1):
        incident = await placing.place(case)
        for family in families:
            plant = await planted(case, incident, FAMILIES[family], protocol.placement)
            if plant is None or incident.sources.metrics is None:
                continue
            entity, since = plant
            normal = await normals(incident)
            rival_entity, rival_shift = await rival(incident, entity, since, FAMILIES[family], normal)
            for shift in shifts:
                stressed = Stressed(incident.sources.metrics, entity, since, shift, FAMILIES[family], normal)
                inc = protocol.record(replace(incident, sources=replace(incident.sources, metrics=stressed)))
                for name, engine in zip(engines, built, strict=True):
                    ranking = (await engine.investigate(inc)).ranking
                    out.append(
                        Outcome(
                            incident.dataset,
                            str(case.id),
                            family,
                            shift,
                            name,
                            entity,
                            case.label.service,
                            ranking[0].service if ranking else None,
                            rival_shift,
                            rival_entity,
                        )
                    )
        print(
            f"\rcase {i}/{len(cases)} ({time.perf_counter() - started:.0f} s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    return out


DOMINANT = 10.0  # "far more than any other entity's": an order of magnitude


def render(outcomes: list[Outcome], engines: list[str]) -> str:
    """Per dataset, family and D: the share of plants above their rival and dominating it;
    each engine's share with the planted service first, with neither it nor the real fault's
    service first (what distracted it), and first among the dominating plants; lats's share of
    BARO's right answers."""
    first: dict[tuple[str, str, float, str], dict[str, Outcome]] = defaultdict(dict)
    for o in outcomes:
        for dataset in (o.dataset, "all"):
            first[(dataset, o.family, o.shift, o.engine)][o.case] = o
    head = f"{'dataset':<22} {'family':<9} {'D':>6} {'cases':>5} {'above':>6} {'dom.':>6} " + " ".join(
        f"{e + ' (neither) dom.':>28}" for e in engines
    )
    kept = "baro" in engines and "lats" in engines
    lines = [
        head + (f" {'lats keeps of baro':>19}" if kept else ""),
        "-" * (len(head) + (20 if kept else 0)),
    ]
    for dataset, family, shift in sorted(
        {(d, f, s) for d, f, s, _ in first}, key=lambda k: (k[0] == "all", k[0], k[1], k[2])
    ):
        cols = [first[(dataset, family, shift, e)] for e in engines]
        n = len(cols[0])
        plants = list(cols[0].values())
        above = sum(shift > o.rival for o in plants) / n
        dominant = {o.case for o in plants if shift >= DOMINANT * o.rival}
        cells = []
        for col in cols:
            planted = sum(o.first == o.planted for o in col.values()) / n
            neither = sum(o.first not in (o.planted, o.root) for o in col.values()) / n
            dom = f"{sum(col[c].first == col[c].planted for c in dominant) / len(dominant):.3f}" if dominant else "-"
            cells.append(f"{planted:.3f} ({neither:.3f}) {dom:>5}")
        line = f"{dataset:<22} {family:<9} {shift:>6g} {n:>5} {above:>6.3f} {len(dominant) / n:>6.3f} " + " ".join(
            f"{c:>28}" for c in cells
        )
        if kept:
            baro, lats = (
                first[(dataset, family, shift, "baro")],
                first[(dataset, family, shift, "lats")],
            )
            won = [c for c, o in baro.items() if o.first == o.planted]
            line += f" {sum(lats[c].first == lats[c].planted for c in won) / len(won):>19.3f}" if won else f" {'-':>19}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.stress", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--engines", default="lats,linear-multi,baro")
    p.add_argument("--shifts", default="10,100,1000", help="comma-separated: robust deviations the stress adds")
    p.add_argument("--families", default="resource", help=f"comma-separated: {', '.join(FAMILIES)}")
    p.add_argument(
        "--protocol",
        default="realistic",
        help="as for rcabot eval: realistic, centred, late, cropped",
    )
    p.add_argument("--resample", default="", help="as for rcabot eval: metrics resampled to this step")
    p.add_argument("--vocabulary", default="", help="as for rcabot eval: cadvisor, otel or short")
    p.add_argument("--fleet", type=int, default=0, help="as for rcabot eval: N idle services")
    p.add_argument("--drift", default="", help="as for rcabot eval: normal levels from another run")
    p.add_argument("--hide", default="", help="as for rcabot eval: logs, traces (read as absent)")
    p.add_argument("--json", type=Path, dest="json_out")
    args = p.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    shifts = [float(s) for s in args.shifts.split(",") if s.strip()]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        p.error(f"unknown families {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    protocol = parse_protocol(
        args.protocol, args.hide, resample=args.resample, vocabulary=args.vocabulary, fleet=args.fleet, drift=args.drift
    )
    cases = [c for path in args.paths for c in find_cases(path)]
    outcomes = asyncio.run(run(cases, engines, shifts, protocol, families))
    print(f"protocol: {protocol.name}; a planted fault of D robust deviations in one service's own series")
    print(render(outcomes, engines))
    if args.json_out:
        args.json_out.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
