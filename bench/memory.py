"""How much memory an investigation and an evaluation hold, per development set.

For each folder given, two figures as a whole process (the peak resident set the kernel
reports for the child, `getrusage`'s ru_maxrss, started by a small interpreter so that it does
not count this process's pages; about 10 MiB of that interpreter's may show in it): `rcabot eval` of every case with the engines
asked, and of its first case alone (one investigation with data loading). Then, in this
process under `tracemalloc`, the peak of Python allocations while each of the first `--cases`
cases is investigated, after the cases before it ran in the same process (what a long-lived
worker or an evaluation holds on to shows as a rising peak), and what stays allocated after
the last. Each engine is run as `rcabot eval` runs it.

usage: python -m bench.memory PATH [PATH ...] [--engines lats,linear-multi,baro] [--cases 10]
                              [--rcabot .venv/bin/rcabot] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tracemalloc
from pathlib import Path

from rca.engines import build_engine
from rca.evaluation.harness import evaluate
from rca.sources.datasets import find_cases

MIB = 2**20


# A child's peak resident set counts the pages of the process it was forked from (the kernel
# keeps the high-water mark across exec), so the command is started by a small interpreter
# that reports what its own child peaked at.
_SHIM = (
    "import os, sys, time\n"
    "started = time.perf_counter()\n"
    "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=["
    "(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0), (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, time.perf_counter() - started)\n"
)


def whole_process(command: list[str]) -> tuple[float, float]:
    """Peak resident MiB and wall seconds of a command run as a whole process (its output dropped)."""
    out = subprocess.run([sys.executable, "-c", _SHIM, *command], capture_output=True, text=True, check=True)
    code, kilobytes, seconds = out.stdout.split()
    if int(code) != 0:
        raise SystemExit(f"failed ({code}): {' '.join(command)}")
    return int(kilobytes) * 1024 / MIB, float(seconds)  # Linux reports kilobytes


def traced(path: str, engines: list[str], cases: int) -> tuple[list[float], float]:
    """Per case, the peak MiB of Python allocations while its investigation ran (the cases
    before it run in this process first), and the MiB still allocated after the last."""
    found = find_cases(path)[:cases]
    built = [build_engine(name) for name in engines]
    peaks: list[float] = []
    tracemalloc.start()
    try:
        for case in found:
            tracemalloc.reset_peak()
            asyncio.run(evaluate(built, [case]))
            peaks.append(tracemalloc.get_traced_memory()[1] / MIB)
        held = tracemalloc.get_traced_memory()[0] / MIB
    finally:
        tracemalloc.stop()
    return peaks, held


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="development sets (folders `rcabot eval` reads)")
    parser.add_argument("--engines", default="lats", help="comma-separated, as for `rcabot eval`")
    parser.add_argument("--cases", type=int, default=10, help="cases investigated under tracemalloc (0: none)")
    parser.add_argument("--rcabot", default=str(Path(sys.executable).with_name("rcabot")))
    parser.add_argument("--json", dest="json_out", type=Path)
    args = parser.parse_args()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    rows = []
    print(f"engines {','.join(engines)}; MiB")
    head = f"{'set':<28} {'cases':>5} {'eval peak':>9} {'eval s':>7} {'one case':>8} {'traced median':>13} {'max':>7} {'held':>7}"
    print(head)
    print("-" * len(head))
    for path in args.paths:
        found = find_cases(path)
        if not found:
            print(f"{path}: no cases", file=sys.stderr)
            continue
        run = [args.rcabot, "eval", path, "--engine", ",".join(engines)]
        eval_peak, eval_seconds = whole_process(run)
        one_peak, _ = whole_process([*run, "--match", found[0].id])
        peaks, held = traced(path, engines, args.cases) if args.cases > 0 else ([], 0.0)
        row = {
            "set": path,
            "cases": len(found),
            "engines": engines,
            "eval_peak_mib": round(eval_peak, 1),
            "eval_seconds": round(eval_seconds, 2),
            "one_case_peak_mib": round(one_peak, 1),
            "traced_peaks_mib": [round(p, 1) for p in peaks],
            "traced_held_mib": round(held, 1),
        }
        rows.append(row)
        median = statistics.median(peaks) if peaks else float("nan")
        print(
            f"{Path(path).name:<28} {len(found):>5} {eval_peak:>9.0f} {eval_seconds:>7.1f} {one_peak:>8.0f} "
            f"{median:>13.0f} {max(peaks, default=float('nan')):>7.0f} {held:>7.0f}"
        )
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
