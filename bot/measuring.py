"""The measuring commands of `rcabot`: eval, eval-star, report, calibrate and rules."""

from __future__ import annotations

import argparse
import json
import os

from bot.config import reasoner_of
from bot.terminal import (
    ProgressBar,
)
from rca.calibration import fit
from rca.engines import build_engine
from rca.engines.lats import VARIANTS
from rca.errors import InputError
from rca.evaluation.harness import evaluate
from rca.evaluation.protocols import parse_protocol
from rca.evaluation.report import (
    calibration_rows,
    coverages,
    render_calibration,
    render_costs,
    render_coverage,
    render_errors,
    render_fit,
    render_seed_spread,
    render_table,
    summaries,
    to_json,
)
from rca.evaluation.results import lab_page, lab_pool, page, plot, read, read_cases, saved, tabulate
from rca.evaluation.star_eval import evaluate_star
from rca.evaluation.star_eval import render as render_star
from rca.evaluation.star_honest import evaluate_honest
from rca.evaluation.star_honest import render as render_honest
from rca.model import BrokenCase
from rca.rules import RULES
from rca.sources.datasets import find_cases


async def do_eval(args: argparse.Namespace) -> int:
    reasoner = reasoner_of(args)
    budget = args.budget
    engines = [build_engine(n, reasoner=reasoner, read_budget=budget) for n in args.engine.split(",") if n.strip()]
    engines += [
        build_engine("lats", ablation=a.strip(), reasoner=reasoner, read_budget=budget)
        for a in args.ablate.split(",")
        if a.strip()
    ]
    if args.repair:
        engines += [
            build_engine(n, repair=True, reasoner=reasoner, read_budget=budget)
            for n in args.engine.split(",")
            if n.strip() in VARIANTS
        ]
    engines += [
        build_engine(n.strip(), reasoner=reasoner, seed=seed, read_budget=budget)
        for seed in args.seeds
        for n in args.engine.split(",")
        if n.strip() in VARIANTS
    ]
    protocol = parse_protocol(
        args.protocol,
        args.hide,
        resample=args.resample,
        vocabulary=args.vocabulary,
        fleet=args.fleet,
        drift=args.drift,
        bystanders=args.bystander_changes,
    )
    broken: list[BrokenCase] = []
    cases = [c for c in find_cases(args.path, broken=broken) if args.match in c.id]
    broken = [b for b in broken if args.match in b.id]
    results = await evaluate(engines, cases, protocol=protocol, progress=ProgressBar(), broken=broken, audit=args.audit)
    rows = summaries(results)
    print(f"protocol: {protocol.name}")
    print(render_table(rows))
    if failed := render_errors(results):
        print()
        print(failed)
    if spread := render_seed_spread(rows):
        print()
        print(spread)
    print()
    print(render_costs(results))
    print()
    print(render_calibration(results))
    if audited := render_coverage(coverages(results)):
        print()
        print(audited)
    if args.json_out:
        args.json_out.write_text(json.dumps(to_json(results, protocol=protocol.name), indent=1))
        print(f"wrote {len(results)} result(s) to {args.json_out}")
    return 0


def do_report(args: argparse.Namespace) -> int:
    cases = read_cases(saved(args.results))  # read once: the page pools the lab, its own page does not
    table = tabulate(cases, pool=lab_pool)
    if args.plot:
        args.plot.write_bytes(plot(table))
    each = [r for r in tabulate(cases) if r.set != lab_pool(r.set)]
    lab = args.out.with_name(f"{args.out.stem}-lab.md") if args.out and each else None
    text = page(
        table,
        plot_name=os.path.relpath(args.plot, args.out.parent) if args.plot and args.out else None,
        lab_page=lab.name if lab else None,
    )
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out} ({len(table)} rows from {args.results})")
    else:
        print(text, end="")
    if lab:
        lab.write_text(lab_page(each))
        print(f"wrote {lab} ({len(each)} rows)")
    return 0


def do_calibrate(args: argparse.Namespace) -> int:
    rows = []
    for path in args.results:
        # a folder of saved evaluations names each row by its set; a file, by the case's dataset
        named = saved(path) if path.is_dir() else [(None, read(path))]
        try:
            for name, evaluation in named:
                rows += calibration_rows(evaluation, args.engine, name)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{path}: not an `rcabot eval --json` result ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise InputError(f"no first places of {args.engine} in {', '.join(str(p) for p in args.results)}")
    sets = sorted({d for d, *_ in rows})
    calibration = fit(
        [(d, f, ok) for d, _, f, ok in rows],
        fitted_on=f"{len(rows)} first places of {args.engine}: {', '.join(sets)}; "
        f"protocols {' | '.join(sorted({p for _, p, *_ in rows}))}",
    )
    print(render_fit(rows, calibration))
    print(f"likely from p >= {calibration.likely:.3f}; weights {', '.join(f'{w:.3f}' for w in calibration.weights)}")
    if args.out:
        args.out.write_text(json.dumps(calibration.to_json(), indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


def do_rules() -> int:
    for rule in RULES:
        print(f"{rule.name:<14} {rule.principle}")
    return 0


async def do_eval_star(args: argparse.Namespace) -> int:
    cases = [c for c in find_cases(args.path) if args.match in c.id]
    if args.honest:
        report = await evaluate_honest(cases, spread=args.replay_spread, progress=ProgressBar())
        print(render_honest(report))
        if args.json_out:
            args.json_out.write_text(json.dumps(report.to_json(), indent=1))
            print(f"wrote {len(report.variants)} variant(s) to {args.json_out}")
        return 0
    print(render_star(await evaluate_star(build_engine("lats"), cases, progress=ProgressBar())))
    return 0
