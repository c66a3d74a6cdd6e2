"""How LATS investigation time grows with the size of the system.

Builds a synthetic system of N services: a random call tree with extra edges (a DAG), one
metric series per service and signal at 1-minute steps, and spans for a few hundred traces
that walk the call graph. One service gets a CPU fault half-way through the window. Prints,
per size, the median seconds of a whole investigation (sources in memory) and whether the
faulty service ranked first.

usage: python bench/scaling.py [--sizes 50,200,1000] [--repeat 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import time

import networkx as nx
import numpy as np

from rca.engines import build_engine
from rca.model import CaseId, Incident, Modality, Normal, Series, Sources, Span, Window
from rca.sources.memory import InMemoryMetrics, InMemoryTraces, StaticTopology

T0 = 1_700_000_000.0
STEP = 60.0
SIGNALS = ("CpuUsageRate(%)", "MemoryUsageRate(%)", "PodServerLatencyP90(s)", "PodWorkload(Ops)")


def build(n: int, seed: int) -> tuple[Incident, str]:
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    names = [f"svc-{i:04d}" for i in range(n)]
    graph = nx.DiGraph()
    graph.add_node(names[0])
    for i in range(1, n):
        graph.add_edge(names[rng.randrange(max(1, i // 2), i) if i > 2 else 0], names[i])
    for _ in range(n // 5):
        a, b = sorted(rng.sample(range(n), 2))
        graph.add_edge(names[a], names[b])
    culprit = names[rng.randrange(n // 2, n)]
    minutes = 120
    times = T0 + STEP * np.arange(minutes)
    inject = T0 + STEP * 110
    series = []
    for name in names:
        for sig in SIGNALS:
            base = {"CpuUsageRate(%)": 10.0, "MemoryUsageRate(%)": 30.0,
                    "PodServerLatencyP90(s)": 0.05, "PodWorkload(Ops)": 5.0}[sig]  # fmt: skip
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="50,200,1000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    asyncio.run(measure([int(s) for s in args.sizes.split(",")], args.repeat, args.seed))


if __name__ == "__main__":
    main()
