"""AC@1 as a function of the read budget: does the search spend few reads well?

Each engine runs every labelled case under PATH with a read budget of 4, 8, 16, 32 reads and
none (`rca.evidence.toolbox.Toolbox.cost`: one metrics query reads every service, a logs or
traces read covers one service, repeats are free), under the realistic window protocol. Prints
AC@1 and the median reads actually spent per engine and budget; `--json` keeps the rows, and
`--render A.json [B.json ...] --out docs/budget` merges runs into a Markdown table and a PNG.
`random` reads services in a random order: the floor a search that chooses its reads must beat.

usage: python -m bench.budget PATH [PATH ...] [--engines lats,linear,linear-multi,random]
                              [--ablations batching,backprop,reflection,check,glance]
                              [--budgets 4,8,16,32,0] [--json OUT]
       python -m bench.budget --render A.json [B.json ...] --out docs/budget
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

from bot.terminal import ProgressBar
from rca.engines import build_engine
from rca.evaluation.harness import evaluate
from rca.evaluation.protocols import parse_protocol
from rca.sources.datasets import find_cases

UNLIMITED = 0  # on the command line and in the rows: no budget


async def measure(
    paths: list[Path], engines: list[str], ablations: list[str], budgets: list[int], protocol: str
) -> list[dict[str, object]]:
    cases = [c for p in paths for c in find_cases(p)]
    rows: list[dict[str, object]] = []
    for budget in budgets:
        limit = budget or None
        built = [build_engine(e, read_budget=limit) for e in engines]
        built += [build_engine("lats", ablation=a, read_budget=limit) for a in ablations]
        results = await evaluate(built, cases, protocol=parse_protocol(protocol), progress=ProgressBar())
        for engine in {r.outcome.engine for r in results}:
            mine = [r for r in results if r.outcome.engine == engine]
            for dataset in sorted({r.outcome.dataset for r in mine}) + ["all"]:
                part = [r for r in mine if dataset in ("all", r.outcome.dataset)]
                reads = [r.diagnosis.cost.reads for r in part]
                rows.append(
                    {
                        "engine": engine,
                        "dataset": dataset,
                        "budget": budget,
                        "cases": len(part),
                        "ac1": sum(r.outcome.right for r in part) / len(part),
                        "median_reads": statistics.median(reads),
                    }
                )
    return rows


def table(rows: list[dict[str, object]]) -> str:
    budgets = sorted({int(r["budget"]) for r in rows}, key=lambda b: b or 10**9)  # type: ignore[call-overload]
    head = "| engine | dataset | " + " | ".join(f"{b or 'none'}" for b in budgets) + " | reads, no budget (median) |"
    lines = [head, "|" + "---|" * (len(budgets) + 3)]
    keys = sorted({(str(r["engine"]), str(r["dataset"])) for r in rows}, key=lambda k: (k[1] == "all", k[1], k[0]))
    for engine, dataset in keys:
        by = {int(r["budget"]): r for r in rows if r["engine"] == engine and r["dataset"] == dataset}  # type: ignore[call-overload]
        cells = [f"{float(by[b]['ac1']):.3f}" if b in by else "-" for b in budgets]  # type: ignore[arg-type]
        free = by.get(UNLIMITED, {}).get("median_reads", "-")
        lines.append(f"| {engine} | {dataset} | " + " | ".join(cells) + f" | {free} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, object]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({str(r["dataset"]) for r in rows})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), sharey=True)
    for ax, dataset in zip(axes if len(datasets) > 1 else [axes], datasets, strict=True):
        for engine in sorted({str(r["engine"]) for r in rows}):
            mine = sorted(
                (r for r in rows if r["engine"] == engine and r["dataset"] == dataset),
                key=lambda r: int(r["budget"]) or 64,
            )  # type: ignore[call-overload]
            xs = [int(r["budget"]) or 64 for r in mine]  # type: ignore[call-overload]
            ax.plot(xs, [float(r["ac1"]) for r in mine], marker="o", label=engine)  # type: ignore[arg-type]
        ax.set_xscale("log", base=2)
        ax.set_xticks([4, 8, 16, 32, 64], ["4", "8", "16", "32", "none"])
        ax.set_title(dataset)
        ax.set_xlabel("read budget")
        ax.grid(alpha=0.3)
    (axes[0] if len(datasets) > 1 else axes).set_ylabel("AC@1")
    (axes[-1] if len(datasets) > 1 else axes).legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.budget", description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="*", type=Path)
    p.add_argument("--engines", default="lats,linear,linear-multi,random")
    p.add_argument("--ablations", default="")
    p.add_argument("--budgets", default="4,8,16,32,0")
    p.add_argument("--protocol", default="realistic")
    p.add_argument("--json", type=Path, dest="json_out")
    p.add_argument("--render", nargs="+", type=Path, help="merge the JSON of earlier runs")
    p.add_argument("--out", type=Path, help="with --render: write OUT.md and OUT.png")
    args = p.parse_args(argv)
    if args.render:
        rows = [row for f in args.render for row in json.loads(f.read_text())]
        print(table(rows))
        if args.out:
            args.out.with_suffix(".md").write_text(table(rows) + "\n")
            plot(rows, args.out.with_suffix(".png"))
        return 0
    if not args.paths:
        p.error("give a folder of labelled cases (or --render)")
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    rows = asyncio.run(
        measure(
            args.paths,
            [e for e in args.engines.split(",") if e],
            [a for a in args.ablations.split(",") if a],
            budgets,
            args.protocol,
        )
    )
    print(table(rows))
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
