"""Where an evaluation's time goes: the top costs of investigating some cases, under cProfile.

The cases (the first `--cases`, or those whose id contains `--match`) are placed by the
protocol and investigated by the engine as `rcabot eval` does it, reading their data included.
Prints the total, then the functions that cost most of their own time (their callees not
counted), then this project's functions that do, each with its share of the total. Profiling slows Python code more than the C inside numpy or pandas, so read the
shares as where to look, and time a change with the whole-process commands in bench/README.md.

usage: python -m bench.profile PATH [--match TEXT] [--cases 5] [--engine lats]
                               [--protocol realistic] [--top 10]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
from dataclasses import dataclass
from pathlib import Path

import rca
from rca.engines import build_engine
from rca.evaluation.harness import evaluate
from rca.evaluation.protocols import Placement, Protocol
from rca.sources.datasets import find_cases

ROOT = Path(rca.__file__).resolve().parents[1]  # the checkout whose code is profiled


@dataclass(frozen=True, slots=True)
class Cost:
    where: str  # file:line(function), shortened
    calls: int
    seconds: float
    share: float  # of the total profiled time


def profile(path: str, *, match: str, cases: int, engine: str, protocol: str) -> pstats.Stats:
    found = [c for c in find_cases(path) if match in c.id] if match else find_cases(path)
    if not found:
        raise SystemExit(f"no case of {path} matches {match!r}")
    engines = [build_engine(engine)]
    placing = Protocol(Placement(protocol))
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(evaluate(engines, found if match else found[:cases], protocol=placing))
    profiler.disable()
    return pstats.Stats(profiler)


def top(stats: pstats.Stats, n: int, *, ours: bool = False) -> list[Cost]:
    """The n functions that cost most of their own time; `ours`: this project's files only."""
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_, calls, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if ours and not _ours(file):
            continue
        rows.append(Cost(_short(file, line, name), calls, tottime, 0.0))
    rows.sort(key=lambda c: -c.seconds)
    return [Cost(c.where, c.calls, c.seconds, c.seconds / total if total else 0.0) for c in rows[:n]]


def _ours(file: str) -> bool:
    """A file of the profiled checkout, not of a library installed inside it (a .venv)."""
    return file.startswith(str(ROOT)) and "site-packages/" not in file


def _short(file: str, line: int, name: str) -> str:
    if "site-packages/" in file:
        file = file.split("site-packages/", 1)[1]
    elif _ours(file):
        file = file[len(str(ROOT)) + 1 :]
    elif file == "~":
        return name  # a builtin
    else:
        file = Path(file).name
    return f"{file}:{line}({name})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--match", default="", help="only cases whose id contains this text")
    p.add_argument("--cases", type=int, default=5)
    p.add_argument("--engine", default="lats")
    p.add_argument("--protocol", default="realistic", choices=[p.value for p in Placement])
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args()
    stats = profile(args.path, match=args.match, cases=args.cases, engine=args.engine, protocol=args.protocol)
    print(f"profiled {stats.total_tt:.2f} s")  # type: ignore[attr-defined]
    for title, costs in (
        ("own time", top(stats, args.top)),
        ("own time, this project's functions", top(stats, args.top, ours=True)),
    ):
        print(f"\ntop {args.top} by {title}:")
        print(f"{'share':>6} {'seconds':>8} {'calls':>9}  where")
        for c in costs:
            print(f"{c.share:>6.1%} {c.seconds:>8.2f} {c.calls:>9}  {c.where}")


if __name__ == "__main__":
    main()
