"""How LATS investigation time grows with the size of the system.

Builds a synthetic system of N services: a random call tree with extra edges (a DAG), one
metric series per service and signal at 1-minute steps, and spans for a few hundred traces
that walk the call graph. One service gets a CPU fault half-way through the window. Prints,
per size, the median seconds of a whole investigation (sources in memory) and whether the
faulty service ranked first.

`--planted` builds the system instead from a real incident's series (the embedded TrainTicket
slice, bot/demo): every synthetic service takes the metric series of a real service, the
planted culprit takes the real root cause's, the services on the path from the entry to it
take the real incident's victims' (the real root's callers, nearest first), and the entry
takes the real symptom's. Each seed draws another call graph, culprit and assignment. For
`lats` under a read budget (`--budget`, 30) and for exhaustive scoring (every tool on every
service, no budget), prints per seed whether the culprit ranked first, the reads spent and
the seconds.

usage: python bench/scaling.py [--sizes 50,200,1000] [--repeat 3] [--seed 0]
       python bench/scaling.py --planted [--sizes 1000] [--seeds 10] [--budget 30]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path

import networkx as nx
import numpy as np

from rca.engines import build_engine
from rca.model import CaseId, Incident, IncidentCase, Modality, Normal, Sources
from rca.sources.datasets import find_cases
from rca.sources.memory import InMemoryMetrics, InMemoryTraces, StaticTopology
from rca.sources.protocols import MetricQuery
from rca.telemetry import Series, Span, Window

REAL = Path(__file__).resolve().parents[1] / "bot" / "demo" / "nezha-trainticket"

T0 = 1_700_000_000.0
STEP = 60.0
SIGNALS = ("CpuUsageRate(%)", "MemoryUsageRate(%)", "PodServerLatencyP90(s)", "PodWorkload(Ops)")


def call_graph(n: int, rng: random.Random) -> tuple[list[str], nx.DiGraph]:
    """N services: a random call tree from the entry (svc-0000) with a fifth as many extra edges."""
    names = [f"svc-{i:04d}" for i in range(n)]
    graph = nx.DiGraph()
    graph.add_node(names[0])
    for i in range(1, n):
        graph.add_edge(names[rng.randrange(max(1, i // 2), i) if i > 2 else 0], names[i])
    for _ in range(n // 5):
        a, b = sorted(rng.sample(range(n), 2))
        graph.add_edge(names[a], names[b])
    return names, graph


def build(n: int, seed: int) -> tuple[Incident, str]:
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    names, graph = call_graph(n, rng)
    culprit = names[rng.randrange(n // 2, n)]
    minutes = 120
    times = T0 + STEP * np.arange(minutes)
    inject = T0 + STEP * 110
    series = []
    for name in names:
        for sig in SIGNALS:
            base = {
                "CpuUsageRate(%)": 10.0,
                "MemoryUsageRate(%)": 30.0,
                "PodServerLatencyP90(s)": 0.05,
                "PodWorkload(Ops)": 5.0,
            }[sig]
            values = base * (1 + 0.05 * nprng.standard_normal(minutes))
            if name == culprit and sig == "CpuUsageRate(%)":
                values[times >= inject] *= 6
            series.append(Series(name, sig, times, values, name))
    spans = _spans(graph, names[0], culprit, inject, rng)
    metrics = InMemoryMetrics(series)
    traces = InMemoryTraces(spans)
    window = Window(T0 + STEP * 104, T0 + STEP * 116)
    sources = Sources(metrics=metrics, traces=traces, topology=StaticTopology(graph))
    normal = {
        Modality.METRICS: Normal(Window(T0, window.start), sources),
        Modality.TRACES: Normal(Window(T0, window.start), sources),
    }
    return Incident(CaseId(f"synthetic/{n}"), "synthetic", names[0], window, sources, normal), culprit


def _spans(graph: nx.DiGraph, root: str, culprit: str, inject: float, rng: random.Random) -> list[Span]:
    spans: list[Span] = []
    counter = itertools.count(1)

    def visit(node: str, parent: str, begin: float, depth: int, trace: str) -> float:
        sid = f"{trace}-{next(counter)}"
        own = 0.002 * (1 + rng.random()) * (6 if node == culprit and begin >= inject else 1)
        end = begin + own
        kids = list(graph.successors(node))
        for child in rng.sample(kids, min(len(kids), 2)) if depth < 6 else []:
            end = visit(child, sid, end, depth + 1, trace) + 0.0005
        spans.append(Span(trace, sid, parent, node, f"op-{node}", begin, end))
        return end

    for t in range(400):
        visit(root, "", T0 + (t / 400) * 116 * STEP, 0, f"tr{t}")
    return spans


async def measure(sizes: list[int], repeat: int, seed: int) -> None:
    engine = build_engine("lats")
    print(f"{'services':>8} {'median s':>9} {'min s':>7} {'max s':>7}  culprit first")
    for n in sizes:
        incident, culprit = build(n, seed)
        took, hits = [], 0
        for _ in range(repeat):
            started = time.perf_counter()
            diagnosis = await engine.investigate(incident)
            took.append(time.perf_counter() - started)
            hits += bool(diagnosis.ranking) and diagnosis.ranking[0].service == culprit
        print(f"{n:>8} {statistics.median(took):>9.2f} {min(took):>7.2f} {max(took):>7.2f}  {hits}/{repeat}")


async def real_case() -> tuple[IncidentCase, dict[str, list[Series]], nx.DiGraph]:
    """The real incident, its series by service (look-back and window in one), its call graph."""
    (case,) = find_cases(REAL)
    inc = case.incident
    normal = inc.normal_for(Modality.METRICS)
    start = normal.window.start if normal is not None else inc.window.start
    assert inc.sources.metrics is not None and inc.sources.topology is not None
    by_service: dict[str, list[Series]] = defaultdict(list)
    for s in await inc.sources.metrics.series(MetricQuery(Window(start, inc.window.end))):
        by_service[s.entity].append(s)
    return case, by_service, await inc.sources.topology.topology()


def plant(
    n: int, seed: int, case: IncidentCase, real: dict[str, list[Series]], real_graph: nx.DiGraph
) -> tuple[Incident, str]:
    """N services whose series are the real incident's, the real root's on a planted culprit."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    names, graph = call_graph(n, rng)
    culprit = names[rng.randrange(n // 2, n)]
    root, symptom = case.label.service, case.incident.symptom
    victims = sorted(
        (v for v in nx.ancestors(real_graph, root) if v in real and v != symptom),
        key=lambda v: nx.shortest_path_length(real_graph, v, root),
    )
    others = sorted(set(real) - {root, symptom, *victims})
    path = nx.shortest_path(graph, names[0], culprit)
    donor = {name: rng.choice(others) for name in names}
    for i, name in enumerate(reversed(path[1:-1])):  # nearest the culprit first
        donor[name] = victims[i % len(victims)] if victims else donor[name]
    donor[culprit], donor[names[0]] = root, symptom if symptom in real else donor[names[0]]
    series = []
    for name in names:
        for s in real[donor[name]]:
            jitter = 1.0 + 0.01 * nprng.standard_normal(s.values.size)  # two copies of one donor differ
            series.append(Series(name, s.metric, s.timestamps, s.values * jitter, name))
    sources = Sources(metrics=InMemoryMetrics(series), topology=StaticTopology(graph))
    inc = case.incident
    normal = inc.normal_for(Modality.METRICS)
    look_back = normal.window if normal is not None else Window(inc.window.start - 3600, inc.window.start)
    return Incident(
        CaseId(f"planted/{n}/{seed}"),
        "planted",
        names[0],
        inc.window,
        sources,
        {Modality.METRICS: Normal(look_back, sources)},
    ), culprit


async def planted(sizes: list[int], seeds: int, budget: int) -> None:
    case, real, real_graph = await real_case()
    engines = {f"lats, budget {budget}": build_engine("lats", read_budget=budget), "exhaustive": build_engine("random")}
    print(
        f"real incident {case.id}: root {case.label.service} ({case.label.fault_type.value}), "
        f"{len(real)} services with series"
    )
    print(f"{'services':>8} {'seed':>4} {'engine':<16} {'first':>5} {'rank':>4} {'reads':>5} {'s':>6}")
    for n in sizes:
        tally: dict[str, list[tuple[bool, int, float]]] = defaultdict(list)
        for seed in range(seeds):
            incident, culprit = plant(n, seed, case, real, real_graph)
            for label, engine in engines.items():
                started = time.perf_counter()
                d = await engine.investigate(incident)
                took = time.perf_counter() - started
                ranked = [c.service for c in d.ranking]
                rank = ranked.index(culprit) + 1 if culprit in ranked else 0
                tally[label].append((rank == 1, d.cost.reads, took))
                print(
                    f"{n:>8} {seed:>4} {label:<16} {'yes' if rank == 1 else 'no':>5} {rank or '-':>4} "
                    f"{d.cost.reads:>5} {took:>6.2f}"
                )
        for label, rows in tally.items():
            print(
                f"{n:>8} {'all':>4} {label:<16} {sum(r[0] for r in rows):>2}/{len(rows)} "
                f"reads median {statistics.median(r[1] for r in rows):.0f} max {max(r[1] for r in rows)}, "
                f"seconds median {statistics.median(r[2] for r in rows):.2f}"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--planted", action="store_true", help="build from a real incident's series")
    p.add_argument("--seeds", type=int, default=10, help="with --planted: call graphs to draw")
    p.add_argument("--budget", type=int, default=30, help="with --planted: lats's read budget")
    args = p.parse_args()
    sizes = [int(s) for s in (args.sizes or ("1000" if args.planted else "50,200,1000")).split(",")]
    if args.planted:
        asyncio.run(planted(sizes, args.seeds, args.budget))
    else:
        asyncio.run(measure(sizes, args.repeat, args.seed))


if __name__ == "__main__":
    main()
