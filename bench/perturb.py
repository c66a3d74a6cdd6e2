"""Do the scoring constants sit on a peak fitted to the development cases?

Every constant of the hypothesis value (rca.rules.config.ScoringConfig and its fault model:
weights, shares, ratios, component scales, specificities, recipe weights) is scaled by its
own random factor drawn uniformly within +-SPREAD, jointly, DRAWS times; each draw re-scores
every case. Printed per dataset: AC@1 with the shipped constants, and the median, quartiles
and range over the draws. Counts (the hops a victim may be from its culprit) and the switches
stay as they are.

The evidence of each case is read once, exhaustively (every tool on every service, no
search: `Toolbox.survey`), under the chosen protocol; only the scoring is repeated, so the
shipped figure here is the exhaustive reading's, which `rcabot eval` reports beside lats's.

With `--ablate rule:NAME[,rule:NAME]` the named scoring rules are off in the shipped reading
and in every draw (the draws are the same: a constant of a rule that is off is drawn, unused),
so a rule's share of the spread can be read against the run without it.

usage: python -m bench.perturb PATH [PATH ...] [--draws 60] [--spread 0.25] [--protocol realistic]
                               [--hide logs] [--seed 0] [--ablate rule:NAME] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from rca.errors import InputError
from rca.evaluation.protocols import parse_protocol
from rca.evidence import Evidence
from rca.evidence.toolbox import Toolbox
from rca.evidence.traces import NO_GAPS, GapShare
from rca.hypotheses import score_hypotheses
from rca.model import IncidentCase, Label, Modality
from rca.rules import parse_rules
from rca.rules.config import ScoringConfig
from rca.sources.datasets import find_cases
from rca.telemetry import Window


@dataclass(frozen=True, slots=True)
class Read:
    """One case read once: what every draw scores."""

    dataset: str
    label: Label
    evidence: list[Evidence]
    graph: nx.DiGraph
    window: Window
    symptom: str
    modalities: frozenset[Modality]
    shares: dict[str, GapShare]
    alert_time: float | None


async def read(case: IncidentCase, protocol_name: str, hide: str) -> Read:
    incident = await parse_protocol(protocol_name, hide).place(case)
    toolbox = Toolbox(incident)
    evidence = await toolbox.survey()
    shares = {e: toolbox.edge_share(e) for e in {ev.entity for ev in evidence}}
    return Read(
        incident.dataset,
        case.label,
        evidence,
        await toolbox.topology(),
        incident.window,
        incident.symptom,
        toolbox.modalities(),
        shares,
        incident.alert_time,
    )


def top_is_right(r: Read, config: ScoringConfig) -> bool:
    hyps = score_hypotheses(
        r.evidence,
        graph=r.graph,
        window=r.window,
        symptom=r.symptom,
        modalities=r.modalities,
        edge_share=lambda e: r.shares.get(e, NO_GAPS),
        config=config,
        alert_time=r.alert_time,
    )
    return bool(hyps) and hyps[0].service == r.label.service


def accuracy(reads: list[Read], config: ScoringConfig) -> dict[str, float]:
    hits: dict[str, list[bool]] = defaultdict(list)
    for r in reads:
        ok = top_is_right(r, config)
        hits[r.dataset].append(ok)
        hits["all"].append(ok)
    return {d: sum(h) / len(h) for d, h in hits.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.perturb", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--draws", type=int, default=60)
    p.add_argument("--spread", type=float, default=0.25)
    p.add_argument("--protocol", default="realistic")
    p.add_argument("--hide", default="")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ablate", default="", help="scoring rules off throughout: rule:NAME[,rule:NAME]")
    p.add_argument("--json", type=Path, dest="json_out")
    args = p.parse_args(argv)
    try:
        off = parse_rules(args.ablate)
    except InputError as exc:
        p.error(str(exc))
    cases = [c for path in args.paths for c in find_cases(path)]
    started = time.perf_counter()
    reads = []
    for i, case in enumerate(cases, start=1):
        reads.append(asyncio.run(read(case, args.protocol, args.hide)))
        print(
            f"\rread {i}/{len(cases)} cases ({time.perf_counter() - started:.0f} s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    base = ScoringConfig(off=off)
    shipped = accuracy(reads, base)
    rng = random.Random(args.seed)
    draws: list[dict[str, float]] = []
    for k in range(args.draws):
        config = base.scaled(lambda: rng.uniform(1.0 - args.spread, 1.0 + args.spread))
        draws.append(accuracy(reads, config))
        print(f"\rdraw {k + 1}/{args.draws}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    rows = []
    head = f"{'dataset':<22} {'cases':>5} {'shipped':>8} {'median':>7} {'q25':>6} {'q75':>6} {'min':>6} {'max':>6}"
    without = f"; without {', '.join(sorted(off))}" if off else ""
    print(
        f"protocol: {parse_protocol(args.protocol, args.hide).name}; {args.draws} draws, "
        f"each constant x U(1 +- {args.spread}){without}"
    )
    print(head)
    print("-" * len(head))
    for dataset in sorted(shipped, key=lambda d: (d == "all", d)):
        values = sorted(d[dataset] for d in draws)
        q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        n = sum(1 for r in reads if dataset in ("all", r.dataset))
        row = {
            "dataset": dataset,
            "cases": n,
            "shipped": shipped[dataset],
            "median": statistics.median(values),
            "q25": q[0],
            "q75": q[2],
            "min": values[0],
            "max": values[-1],
        }
        rows.append(row)
        print(
            f"{dataset:<22} {n:>5} {row['shipped']:>8.3f} {row['median']:>7.3f} {row['q25']:>6.3f} {row['q75']:>6.3f} "
            f"{row['min']:>6.3f} {row['max']:>6.3f}"
        )
    if args.json_out:
        args.json_out.write_text(
            json.dumps(
                {
                    "protocol": args.protocol,
                    "hide": args.hide,
                    "ablate": sorted(off),
                    "draws": args.draws,
                    "spread": args.spread,
                    "rows": rows,
                    "per_draw": draws,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
