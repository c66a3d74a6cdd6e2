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

`--prometheus` asks a real Prometheus (Debian's, started here on a free port) as the bot asks
a live one: N services' cAdvisor and OpenTelemetry series over two hours, at a 15 s scrape, are
backfilled with promtool; one service's CPU rises six-fold ten minutes before the end, and its
latency and its callers' with it. The bot's live telemetry (the default Prometheus mapping and
the call graph as a topology file) investigates the entry service's last 15 minutes. Prints
per size the seconds from the question to the verdict (discovery included, each run with
fresh telemetry), the requests Prometheus served for it (counted by Prometheus itself) and
whether the culprit ranked first.

usage: python bench/scaling.py [--sizes 50,200,1000] [--repeat 3] [--seed 0]
       python bench/scaling.py --planted [--sizes 1000] [--seeds 10] [--budget 30]
       python bench/scaling.py --prometheus [--sizes 1000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import re
import statistics
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import networkx as nx
import numpy as np
import yaml

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


SCRAPE = 15.0  # seconds between samples of the live system
LIVE_SECONDS = 7200.0  # two hours of it
LIVE_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0)  # latency histogram bounds (s), +Inf added


def live_system(n: int, seed: int, out: TextIO) -> tuple[nx.DiGraph, str, str, int]:
    """Write N services' series as OpenMetrics text (cAdvisor counters and gauges under
    `container`, OpenTelemetry HTTP server counts and latency buckets under `service_name`);
    returns the call graph, the entry, the culprit and the number of series written."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    names, graph = call_graph(n, rng)
    culprit = names[rng.randrange(n // 2, n)]
    callers = nx.ancestors(graph, culprit)
    k = int(LIVE_SECONDS / SCRAPE) + 1
    times = T0 + SCRAPE * np.arange(k)
    faulty = times >= times[-1] - 600.0
    stamps = [f"{t:.3f}" for t in times]
    families: dict[str, list[tuple[str, np.ndarray]]] = defaultdict(list)
    for name in names:
        pod = f'container="{name}",pod="{name}-0"'
        otel = f'service_name="{name}"'
        load = rng.uniform(5.0, 50.0) * (1 + 0.1 * np.sin(2 * np.pi * times / 86400.0))
        load = load * (1 + 0.05 * nprng.standard_normal(k)).clip(0.5)
        cpu = 0.05 + 0.002 * load
        latency = np.full(k, rng.uniform(0.02, 0.08))
        if name == culprit:
            cpu = np.where(faulty, cpu * 6, cpu)
            latency = np.where(faulty, latency * 5, latency)
        elif name in callers:
            latency = np.where(faulty, latency * 2, latency)
        latency = latency * (1 + 0.05 * nprng.standard_normal(k)).clip(0.5)
        served = np.cumsum(load * SCRAPE)
        families["container_cpu_usage_seconds_total"].append((pod, np.cumsum(cpu * SCRAPE)))
        memory = 2.0e8 * (1 + 0.02 * nprng.standard_normal(k))
        families["container_memory_working_set_bytes"].append((pod, memory))
        families["container_network_receive_bytes_total"].append((pod, 2000 * served))
        families["container_network_transmit_bytes_total"].append((pod, 3000 * served))
        families["http_server_request_duration_seconds_count"].append(
            (f'{otel},http_response_status_code="200"', served * 0.999)
        )
        families["http_server_request_duration_seconds_count"].append(
            (f'{otel},http_response_status_code="500"', served * 0.001)
        )
        step = load * SCRAPE  # requests served in each scrape interval, below each bound
        for le in LIVE_BUCKETS:
            below = np.cumsum(step * (1 - np.exp(-le / latency)))
            families["http_server_request_duration_seconds_bucket"].append((f'{otel},le="{le:g}"', below))
        families["http_server_request_duration_seconds_bucket"].append((f'{otel},le="+Inf"', served))
    for family_name, rows in families.items():
        out.write(f"# TYPE {family_name} gauge\n")
        for labels, values in rows:
            head = f"{family_name}{{{labels}}} "
            out.write("".join(f"{head}{v:.6g} {t}\n" for v, t in zip(values, stamps, strict=True)))
    out.write("# EOF\n")
    return graph, names[0], culprit, sum(len(rows) for rows in families.values())


def served_requests(url: str) -> int:
    """The API requests a Prometheus has answered, read from its own /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    pattern = re.compile(r'^prometheus_http_requests_total\{[^}]*handler="/api/v1/[^"]*"[^}]*\} (\S+)$', re.M)
    return int(sum(float(v) for v in pattern.findall(text)))


@contextmanager
def _workdir(keep: str) -> Iterator[Path]:
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield Path(keep)
    else:
        with tempfile.TemporaryDirectory(prefix="rcabot-scaling-") as tmp:
            yield Path(tmp)


@dataclass(frozen=True, slots=True)
class LiveRuns:
    services: int
    series: int
    seconds: tuple[float, ...]  # question to verdict, per run
    queries: int  # the most API requests one run made
    culprit_first: int  # runs that put the culprit first
    missing: tuple[str, ...]  # what the last run said was missing


def live_runs(n: int, seed: int, repeat: int, work: Path) -> LiveRuns:
    """Backfill a real Prometheus with N services (live_system) in `work` and investigate
    through the bot's live telemetry `repeat` times."""
    from bot.backfill import serving
    from bot.config import LiveConfig
    from bot.telemetry import LiveTelemetry

    work.mkdir(parents=True, exist_ok=True)
    om = work / "metrics.om"
    with om.open("w") as f:
        graph, entry, culprit, series = live_system(n, seed, f)
    topology = work / "topology.yaml"
    topology.write_text(yaml.safe_dump({"calls": {node: sorted(graph.successors(node)) for node in graph}}))
    engine = build_engine("lats")
    took, queries, hits, missing = [], [], 0, ()
    with serving(om, work, timeout=600) as url:
        for _ in range(repeat):
            before = served_requests(url)
            telemetry = LiveTelemetry(
                LiveConfig(prometheus_url=url, topology=topology, timeout=60.0), now=T0 + LIVE_SECONDS
            )
            started = time.perf_counter()
            diagnosis = asyncio.run(_verdict(telemetry, entry, engine))
            took.append(time.perf_counter() - started)
            queries.append(served_requests(url) - before)
            hits += bool(diagnosis.ranking) and diagnosis.ranking[0].service == culprit
            missing = diagnosis.missing
    return LiveRuns(n, series, tuple(took), max(queries), hits, tuple(missing))


def live(sizes: list[int], repeat: int, seed: int, keep: str) -> None:
    print(f"{'services':>8} {'series':>7} {'median s':>9} {'min s':>7} {'max s':>7} {'queries':>7}  culprit first")
    for n in sizes:
        with _workdir(keep) as root:
            r = live_runs(n, seed, repeat, root / f"prometheus-{n}")
        for note in r.missing:
            print(f"{'':>8} missing: {note}")
        print(
            f"{n:>8} {r.series:>7} {statistics.median(r.seconds):>9.2f} {min(r.seconds):>7.2f} "
            f"{max(r.seconds):>7.2f} {r.queries:>7}  {r.culprit_first}/{repeat}"
        )


async def _verdict(telemetry: object, entry: str, engine: object) -> object:
    incident = await telemetry.incident(entry, await telemetry.window("15m"))  # type: ignore[attr-defined]
    return await engine.investigate(incident)  # type: ignore[attr-defined]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--planted", action="store_true", help="build from a real incident's series")
    p.add_argument("--seeds", type=int, default=10, help="with --planted: call graphs to draw")
    p.add_argument("--budget", type=int, default=30, help="with --planted: lats's read budget")
    p.add_argument("--prometheus", action="store_true", help="ask a real Prometheus backfilled with the system")
    p.add_argument("--keep", default="", help="with --prometheus: keep the backfill and Prometheus's data here")
    args = p.parse_args()
    sizes = [int(s) for s in (args.sizes or ("1000" if args.planted or args.prometheus else "50,200,1000")).split(",")]
    if args.prometheus:
        live(sizes, args.repeat, args.seed, args.keep)
    elif args.planted:
        asyncio.run(planted(sizes, args.seeds, args.budget))
    else:
        asyncio.run(measure(sizes, args.repeat, args.seed))


if __name__ == "__main__":
    main()
