"""The `rcabot` command line: its parser, and the dispatch to each command (bot.commands)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import sys
from pathlib import Path

from rca.engines import engine_names
from rca.engines.lats import ABLATIONS
from rca.errors import RcaError
from rca.evaluation.star_honest import REPLAY_SPREAD
from storage.database import record

log = logging.getLogger("rcabot")


REASONERS = ("offline", "claude")
REASONER_HELP = "who reasons: offline (deterministic) or claude (default: claude when ANTHROPIC_API_KEY is set)"


def _add_sources(p: argparse.ArgumentParser) -> None:
    """Where telemetry comes from: a recording, live backends, or both (backends win)."""
    p.add_argument(
        "--data", type=Path, help="a recorded dataset or snapshot (default: RCABOT_DATA, or only live backends)"
    )
    p.add_argument("--prometheus", help="a Prometheus base URL to read metrics from (default: PROMETHEUS_URL)")
    p.add_argument(
        "--prom-mapping", type=Path, help="engine metric -> PromQL YAML (default: RCABOT_PROM_MAPPING or built-in)"
    )
    p.add_argument("--loki", help="a Loki base URL to read logs from (default: LOKI_URL)")
    p.add_argument("--logs", type=Path, help="a directory of per-service log files (default: RCABOT_LOG_DIR)")
    p.add_argument("--jaeger", help="a Jaeger query base URL to read traces from (default: JAEGER_URL)")
    p.add_argument("--otlp", type=Path, help="an OTLP/JSON trace file or directory (default: RCABOT_OTLP)")
    p.add_argument(
        "--topology", type=Path, help="a call graph in YAML, calls: {caller: [callee]} (default: RCABOT_TOPOLOGY)"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rcabot", description="Root-cause analysis for microservice incidents.")
    sub = p.add_subparsers(dest="command", required=True)

    cases = sub.add_parser("cases", help="list the labelled incidents found under a path")
    cases.add_argument("path", type=Path)

    inv = sub.add_parser("investigate", help="rank root causes for one incident")
    inv.add_argument("service", help="where the symptom shows (the alerting service)")
    inv.add_argument("window", help="30m, 1h30m, 90s, 14:05-14:35 or START/END")
    _add_sources(inv)
    inv.add_argument("--at", help="'now' inside the recorded data (ISO time or epoch)")
    inv.add_argument("--engine", default="lats", choices=engine_names())
    inv.add_argument("--json", action="store_true", help="print the four-stage trace as JSON")
    inv.add_argument("--quiet", action="store_true", help="no live progress, only the result")
    inv.add_argument("--reasoner", choices=REASONERS, help=REASONER_HELP)
    inv.add_argument("--budget", type=_budget, help=BUDGET_HELP)

    ev = sub.add_parser("eval", help="measure engines on every labelled case under a path")
    ev.add_argument("path", type=Path)
    ev.add_argument("--engine", default="lats", help=f"comma-separated: {','.join(engine_names())}")
    ev.add_argument(
        "--ablate",
        default="",
        help=f"comma-separated lats ablations: {','.join(ABLATIONS)}, or rule:NAME for a scoring rule "
        "(rcabot rules lists them)",
    )
    ev.add_argument("--repair", action="store_true", help="also run each search engine followed by STAR's repair")
    ev.add_argument("--budget", type=_budget, help=BUDGET_HELP)
    ev.add_argument(
        "--audit",
        action="store_true",
        help="audit each trace with STAR and report how well the audit predicts a wrong first place",
    )
    ev.add_argument(
        "--seeds",
        default="",
        type=_seeds,
        help="comma-separated sampling seeds: also run each search engine with each (how stable it is)",
    )
    ev.add_argument("--json", type=Path, dest="json_out", help="write per-case results here")
    ev.add_argument("--match", default="", help="only cases whose id contains this text")
    ev.add_argument(
        "--protocol",
        default="realistic",
        help="where each window lies: realistic (default: ends 1-5 min after the fault began, "
        "reaches back 15-60 min, no alert time), centred (the layout's window, as published), "
        "late (begins 1-10 min after the fault began, runs 15 min) or cropped (realistic, over a "
        "recording that begins at the fault)",
    )
    ev.add_argument("--hide", default="", help="comma-separated: logs, traces, metrics, topology (read as absent)")
    ev.add_argument("--resample", default="", metavar="STEP", help="metrics resampled to this step (1s, 5s, 60s)")
    ev.add_argument("--vocabulary", default="", help="metric names rewritten: cadvisor, otel or short")
    ev.add_argument("--fleet", type=int, default=0, metavar="N", help="N idle services of noise beside the real ones")
    ev.add_argument(
        "--bystander-changes",
        type=int,
        default=0,
        metavar="N",
        help="N harmless deploys planted on services other than the labelled one, around each window",
    )
    ev.add_argument(
        "--drift",
        default="",
        metavar="SHARE",
        help="normal behaviour from another run: each normal series at a level up to this share "
        "(0.2 or 20%%) from its own",
    )
    ev.add_argument("--reasoner", choices=REASONERS, help=REASONER_HELP)

    es = sub.add_parser("eval-star", help="STAR's evaluation: injected reasoning faults, stage localisation")
    es.add_argument("path", type=Path)
    es.add_argument("--match", default="", help="only cases whose id contains this text")
    es.add_argument("--json", dest="json_out", type=Path, help="with --honest: write every variant's result here")
    es.add_argument(
        "--honest",
        action="store_true",
        help="lats's own traces under realistic windows, given reasoning errors the audit is not told "
        "of, and clean rewrites: detection, false alarms, repairs judged by the label",
    )
    es.add_argument(
        "--replay-spread",
        type=_spread,
        default=REPLAY_SPREAD,
        help=f"with --honest: each replay scores with every constant drawn within this share of its "
        f"value (default {REPLAY_SPREAD}: an independent sampling of the reasoner; 0: the "
        "function that built the trace)",
    )

    au = sub.add_parser("audit", help="audit a four-stage trace (STAR) and print the verdict as JSON")
    au.add_argument("trace", type=Path, help="a trace written by `rcabot investigate --json`")
    au.add_argument("--data", type=Path, help="the dataset the trace was read from (for its call graph)")

    rp = sub.add_parser("repair", help="audit a trace and repair it (STAR), writing the repaired trace")
    rp.add_argument("trace", type=Path, help="a trace written by `rcabot investigate --json`")
    rp.add_argument("--data", type=Path, required=True, help="the dataset the trace was read from")
    rp.add_argument("--out", type=Path, help="where to write the repaired trace (default: print it)")
    rp.add_argument(
        "--memory",
        type=record,
        default=Path("rcabot-repair-memory.db"),
        help="the repair memory: a SQLite file or a postgresql:// URL",
    )

    ve = sub.add_parser("verify", help="run a trace's verification tests against the telemetry")
    ve.add_argument("trace", type=Path, help="a trace written by `rcabot investigate --json`")
    ve.add_argument("--data", type=Path, required=True, help="the dataset the trace was read from")
    ve.add_argument("--json", action="store_true", help="print the run as JSON")

    sub.add_parser("demo", help="investigate the embedded TrainTicket incident, offline")

    sub.add_parser("rules", help="the scoring rules, each with its principle (for --ablate rule:NAME)")

    cal = sub.add_parser("calibrate", help="fit the first place's probability on `rcabot eval --json` results")
    cal.add_argument(
        "results",
        nargs="+",
        type=Path,
        help="eval JSON files (plain or gzipped), or folders saved as <dir>/<set>/<name>.json (results/)",
    )
    cal.add_argument("--engine", default="lats", help="whose first places to fit on (default lats)")
    cal.add_argument("--out", type=Path, help="write the calibration here (the package's: rca/calibration.json)")

    rep = sub.add_parser("report", help="the results page, from the evaluations saved as <dir>/<set>/<name>.json")
    rep.add_argument("results", type=Path, help="the folder of saved evaluations (results/)")
    rep.add_argument("--out", type=Path, help="write the page here (default: print it)")
    rep.add_argument("--plot", type=Path, help="write the AC@1 plot here, as SVG")

    sub.add_parser("serve", help="run the Slack app (settings from the environment, see .env.example)")
    sub.add_parser("worker", help="run investigations from the job queue (RCABOT_QUEUE), for `serve` replicas")

    sn = sub.add_parser("snapshot", help="save what an investigation reads from live backends, to replay later")
    sn.add_argument("service", help="where the symptom shows")
    sn.add_argument("window", help="30m, 1h30m, 90s, 14:05-14:35 or START/END")
    sn.add_argument("--out", type=Path, required=True, help="a new directory for the snapshot (Nezha layout)")
    sn.add_argument("--at", help="'now' (ISO time or epoch; default: now, or the end of --data)")
    _add_sources(sn)

    bf = sub.add_parser("backfill-prometheus", help="a recorded incident's metrics as OpenMetrics + a mapping file")
    bf.add_argument("data", type=Path, help="a recorded dataset")
    bf.add_argument("--out", type=Path, required=True, help="directory for metrics.om and mapping.yaml")
    bf.add_argument("--match", default="", help="the first case whose id contains this text")

    lb = sub.add_parser("lab", help="the lab: a shop of real services to break and record (needs prometheus)")
    lab_sub = lb.add_subparsers(dest="lab_command", required=True)
    rec = lab_sub.add_parser("record", help="run seeded shops, inject seeded faults, write labelled incidents")
    rec.add_argument("--out", type=Path, required=True, help="where lab-<seed>/ recordings go (Nezha layout)")
    rec.add_argument("--seeds", default="0-2", help="seeds to record: 0-2, 5,7, or 'fresh:3' for 3 drawn now")
    rec.add_argument("--faults", type=int, default=8, help="faults per shop (default 8)")
    rec.add_argument("--warmup", default="6m", help="normal load before the first fault (default 6m)")
    rec.add_argument("--spacing", default="4m-7m", help="time between fault starts (default 4m-7m)")
    rec.add_argument("--duration", default="2m-4m", help="how long each fault lasts (default 2m-4m)")
    rec.add_argument("--tail", default="4m", help="normal load after the last fault ends (default 4m)")
    rec.add_argument("--rate", type=float, default=10.0, help="requests a second at the entry (default 10)")
    rec.add_argument("--parallel", type=int, default=3, help="shops recorded at once (default 3)")
    rec.add_argument("--families", default="", help="fault families to draw from, by commas (default: all)")
    rec.add_argument(
        "--harmless", type=int, default=0, help="harmless deploys to bystander services per shop (default 0)"
    )

    nm = lab_sub.add_parser(
        "normal", help="keep each recording's warm-up as its fault-free stretch (recordings made before it was kept)"
    )
    nm.add_argument("recordings", type=Path, nargs="+", help="lab-<seed>/ folders, or folders holding them")

    co = sub.add_parser("console", help="the Slack experience in a terminal: /rca, repair, verify, questions")
    co.add_argument(
        "--data", type=Path, help="a recorded dataset to replay (default: RCABOT_DATA or the embedded incident)"
    )
    co.add_argument("--at", help="'now' inside the recorded data (default: RCABOT_NOW or its end)")
    co.add_argument(
        "--db", type=record, help="the record: a SQLite file or a postgresql:// URL (default: RCABOT_DB or rcabot.db)"
    )
    co.add_argument("--reasoner", choices=REASONERS, help=REASONER_HELP)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except RcaError as exc:
        print(f"rcabot: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (head, less) stopped reading: what it wanted was printed
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return 0
    except KeyboardInterrupt:
        print("rcabot: interrupted", file=sys.stderr)
        return 130


async def _run(args: argparse.Namespace) -> int:
    # a command's module is loaded when it runs: an evaluation need not hold the bot's server,
    # its broker clients and the live backends' HTTP stack in memory
    if args.command in ("eval", "rules", "report", "calibrate", "eval-star"):
        from bot import measuring

        match args.command:
            case "eval":
                return await measuring.do_eval(args)
            case "rules":
                return measuring.do_rules()
            case "report":
                return measuring.do_report(args)
            case "calibrate":
                return measuring.do_calibrate(args)
            case "eval-star":
                return await measuring.do_eval_star(args)
    if args.command == "lab":
        from bot import lab_command

        return await lab_command.do_lab(args)
    from bot import commands

    match args.command:
        case "cases":
            return commands.do_cases(args.path)
        case "investigate":
            return await commands.do_investigate(args)
        case "demo":
            return await commands.do_demo()
        case "audit":
            return await commands.do_audit(args)
        case "verify":
            return await commands.do_verify(args)
        case "repair":
            return await commands.do_repair(args)
        case "serve":
            return await commands.do_serve()
        case "worker":
            return await commands.do_worker()
        case "console":
            return await commands.do_console(args)
        case "snapshot":
            return await commands.do_snapshot(args)
        case "backfill-prometheus":
            return await commands.do_backfill(args)
    raise AssertionError(args.command)


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are whole numbers separated by commas, not {text!r}") from None


BUDGET_HELP = (
    "telemetry reads a search may make (one metrics query reads every service; a logs or "
    "traces read covers one service; repeats are free); spent, it decides on what it read"
)


def _budget(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"a read budget is a whole number from 1 to 100000, not {text!r}")
    return int(text)


def _spread(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value < 1.0:  # a factor of 1 - spread must stay positive
        raise argparse.ArgumentTypeError(f"a replay spread is a share from 0 up to (not including) 1, not {text!r}")
    return value


if __name__ == "__main__":
    raise SystemExit(main())
