"""The `rcabot` command line: cases, investigate, eval, audit, demo."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import networkx as nx

from bot.config import check_url, read_settings
from bot.telemetry import LiveConfig, embedded_data, telemetry_from
from bot.terminal import (
    ProgressBar,
    render_audit,
    render_diagnosis,
    render_event,
    render_verification,
)
from rca.calibration import fit
from rca.engines import Engine, build_engine, engine_names
from rca.engines.lats import VARIANTS, SearchEngine, diagnosis_of
from rca.errors import InputError, RcaError
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
from rca.evaluation.results import page, plot, saved
from rca.evaluation.results import rows as results_rows
from rca.evaluation.star_eval import evaluate_star
from rca.evaluation.star_eval import render as render_star
from rca.evaluation.star_honest import REPLAY_SPREAD, evaluate_honest
from rca.evaluation.star_honest import render as render_honest
from rca.evidence.toolbox import Toolbox
from rca.model import BrokenCase, Diagnosis, Incident
from rca.reasoners import Reasoner
from rca.replay import replay_incident
from rca.rules import RULES
from rca.search.events import Finished
from rca.sources.datasets import find_cases, find_recordings
from rca.sources.snapshot import write_snapshot
from rca.star.audit import Audit, audit
from rca.star.context import audit_context
from rca.star.criteria import AuditContext
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, repair
from rca.star.verify import run_tests
from rca.timestamps import parse_timestamp
from rca.trace import Trace, from_json
from rca.trace import to_json as trace_json
from rca.windows import parse_duration
from storage.database import record
from storage.investigations import Store
from storage.repair_memory import SqlRepairMemory

log = logging.getLogger("rcabot")


REASONERS = ("offline", "claude")
REASONER_HELP = "who reasons: offline (deterministic) or claude (default: claude when ANTHROPIC_API_KEY is set)"


def _reasoner(args: argparse.Namespace) -> Reasoner:
    settings = read_settings()
    if args.reasoner == "claude" and not settings.anthropic_api_key:
        raise InputError("--reasoner claude needs ANTHROPIC_API_KEY")
    chosen = args.reasoner or settings.reasoner
    return replace(settings, reasoner=chosen).build_reasoner()


def _add_sources(p: argparse.ArgumentParser) -> None:
    """Where telemetry comes from: a recording, live backends, or both (backends win)."""
    p.add_argument("--data", type=Path, help="a recorded dataset or snapshot (default: RCABOT_DATA, or only live backends)")
    p.add_argument("--prometheus", help="a Prometheus base URL to read metrics from (default: PROMETHEUS_URL)")
    p.add_argument("--prom-mapping", type=Path, help="engine metric -> PromQL YAML (default: RCABOT_PROM_MAPPING or built-in)")
    p.add_argument("--loki", help="a Loki base URL to read logs from (default: LOKI_URL)")
    p.add_argument("--logs", type=Path, help="a directory of per-service log files (default: RCABOT_LOG_DIR)")
    p.add_argument("--jaeger", help="a Jaeger query base URL to read traces from (default: JAEGER_URL)")
    p.add_argument("--otlp", type=Path, help="an OTLP/JSON trace file or directory (default: RCABOT_OTLP)")
    p.add_argument("--topology", type=Path, help="a call graph in YAML, calls: {caller: [callee]} (default: RCABOT_TOPOLOGY)")


async def _incident_from(args: argparse.Namespace) -> tuple[Incident, LiveConfig]:
    """The incident a command's service, window and source options name."""
    settings = read_settings()
    given = {"prometheus_url": args.prometheus, "prom_mapping": args.prom_mapping, "loki_url": args.loki,
             "log_dir": args.logs, "jaeger_url": args.jaeger, "otlp": args.otlp, "topology": args.topology}
    for name, flag in (("prometheus_url", "--prometheus"), ("loki_url", "--loki"), ("jaeger_url", "--jaeger")):
        check_url(flag, str(given[name] or ""))
    live = replace(settings.live, **{k: v for k, v in given.items() if v})
    data = args.data or settings.data
    if data is None and not live.any:
        raise InputError("give --data PATH (a recording) or a live backend (--prometheus, --loki, --logs, "
                         "--jaeger, --otlp)")  # fmt: skip
    now = parse_timestamp(args.at) if args.at else settings.now
    absolute = "/" in args.window or ".." in args.window  # an ISO range needs no "now"
    if now is None and data is not None and not absolute:
        print("note: --at not given, replaying at the end of the recorded data", file=sys.stderr)
    telemetry = telemetry_from(data=data, now=now, live=live)
    return await telemetry.incident(args.service, await telemetry.window(args.window)), live


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rcabot", description="Root-cause analysis for microservice incidents."
    )
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
    ev.add_argument("--ablate", default="", help="comma-separated lats ablations: batching,backprop,reflection,check,glance,peer-spread, or rule:NAME "
                         "for a scoring rule (rcabot rules lists them)")
    ev.add_argument("--repair", action="store_true", help="also run each search engine followed by STAR's repair")
    ev.add_argument("--budget", type=_budget, help=BUDGET_HELP)
    ev.add_argument("--audit", action="store_true",
                    help="audit each trace with STAR and report how well the audit predicts a wrong first place")
    ev.add_argument("--seeds", default="", type=_seeds,
                    help="comma-separated sampling seeds: also run each search engine with each (how stable it is)")
    ev.add_argument("--json", type=Path, dest="json_out", help="write per-case results here")
    ev.add_argument("--match", default="", help="only cases whose id contains this text")
    ev.add_argument("--protocol", default="realistic",
                    help="where each window lies: realistic (default: ends 1-5 min after the fault began, "
                         "reaches back 15-60 min, no alert time), centred (the layout's window, as published), "
                         "late (begins 1-10 min after the fault began, runs 15 min) or cropped (realistic, over a "
                         "recording that begins at the fault)")
    ev.add_argument("--hide", default="", help="comma-separated: logs, traces, metrics, topology (read as absent)")
    ev.add_argument("--resample", default="", metavar="STEP", help="metrics resampled to this step (1s, 5s, 60s)")
    ev.add_argument("--vocabulary", default="", help="metric names rewritten: cadvisor, otel or short")
    ev.add_argument("--fleet", type=int, default=0, metavar="N", help="N idle services of noise beside the real ones")
    ev.add_argument("--drift", default="", metavar="SHARE",
                    help="normal behaviour from another run: each normal series at a level up to this share "
                         "(0.2 or 20%%) from its own")  # fmt: skip
    ev.add_argument("--reasoner", choices=REASONERS, help=REASONER_HELP)

    es = sub.add_parser("eval-star", help="STAR's evaluation: injected reasoning faults, stage localisation")
    es.add_argument("path", type=Path)
    es.add_argument("--match", default="", help="only cases whose id contains this text")
    es.add_argument("--json", dest="json_out", type=Path, help="with --honest: write every variant's result here")
    es.add_argument("--honest", action="store_true",
                    help="lats's own traces under realistic windows, given reasoning errors the audit is not told "
                         "of, and clean rewrites: detection, false alarms, repairs judged by the label")  # fmt: skip
    es.add_argument("--replay-spread", type=_spread, default=REPLAY_SPREAD,
                    help=f"with --honest: each replay scores with every constant drawn within this share of its "
                         f"value (default {REPLAY_SPREAD}: an independent sampling of the reasoner; 0: the "
                         "function that built the trace)")  # fmt: skip

    au = sub.add_parser("audit", help="audit a four-stage trace (STAR) and print the verdict as JSON")
    au.add_argument("trace", type=Path, help="a trace written by `rcabot investigate --json`")
    au.add_argument("--data", type=Path, help="the dataset the trace was read from (for its call graph)")

    rp = sub.add_parser("repair", help="audit a trace and repair it (STAR), writing the repaired trace")
    rp.add_argument("trace", type=Path, help="a trace written by `rcabot investigate --json`")
    rp.add_argument("--data", type=Path, required=True, help="the dataset the trace was read from")
    rp.add_argument("--out", type=Path, help="where to write the repaired trace (default: print it)")
    rp.add_argument("--memory", type=record, default=Path("rcabot-repair-memory.db"),
                    help="the repair memory: a SQLite file or a postgresql:// URL")  # fmt: skip

    ve = sub.add_parser("verify", help="run a trace's verification tests against the telemetry")
    ve.add_argument("trace", type=Path, help="a trace written by `rcabot investigate --json`")
    ve.add_argument("--data", type=Path, required=True, help="the dataset the trace was read from")
    ve.add_argument("--json", action="store_true", help="print the run as JSON")

    sub.add_parser("demo", help="investigate the embedded TrainTicket incident, offline")

    sub.add_parser("rules", help="the scoring rules, each with its principle (for --ablate rule:NAME)")

    cal = sub.add_parser("calibrate", help="fit the first place's probability on `rcabot eval --json` results")
    cal.add_argument("results", nargs="+", type=Path, help="eval JSON files (every set, every protocol)")
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

    co = sub.add_parser("console", help="the Slack experience in a terminal: /rca, repair, verify, questions")
    co.add_argument("--data", type=Path, help="a recorded dataset to replay (default: RCABOT_DATA or the embedded incident)")
    co.add_argument("--at", help="'now' inside the recorded data (default: RCABOT_NOW or its end)")
    co.add_argument("--db", type=record, help="the record: a SQLite file or a postgresql:// URL (default: RCABOT_DB or rcabot.db)")
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
    if args.command == "cases":
        return _cases(args.path)
    if args.command == "investigate":
        return await _investigate(args)
    if args.command == "eval":
        return await _eval(args)
    if args.command == "demo":
        return await _demo()
    if args.command == "rules":
        for rule in RULES:
            print(f"{rule.name:<14} {rule.principle}")
        return 0
    if args.command == "report":
        return _report(args)
    if args.command == "calibrate":
        return _calibrate(args)
    if args.command == "audit":
        return await _audit(args)
    if args.command == "eval-star":
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
    if args.command == "verify":
        return await _verify(args)
    if args.command == "repair":
        return await _repair(args)
    if args.command == "serve":
        from bot.app import serve  # the Slack app and its HTTP server: only for `serve`

        await serve(read_settings())
        return 0
    if args.command == "worker":
        return await _worker()
    if args.command == "console":
        return await _console(args)
    if args.command == "snapshot":
        incident, live = await _incident_from(args)
        origin = {k: str(v) for k, v in (("data", args.data), ("prometheus", live.prometheus_url), ("loki", live.loki_url),
                  ("logs", live.log_dir), ("jaeger", live.jaeger_url), ("otlp", live.otlp)) if v}  # fmt: skip
        out = await write_snapshot(incident, args.out, origin=origin, created=time.time())
        print(f"saved {incident.symptom} {incident.window.to_iso()} to {out}; replay: "
              f"rcabot investigate {incident.symptom} {incident.window.to_iso()} --data {out}")
        return 0
    if args.command == "backfill-prometheus":
        return await _backfill(args)
    if args.command == "lab":
        return await _lab(args)
    raise AssertionError(args.command)


async def _lab(args: argparse.Namespace) -> int:
    from lab.record import record, seeds_of  # the lab's own dependencies: only for `rcabot lab`

    seeds = seeds_of(args.seeds)
    spacing, duration = _duration_range(args.spacing, "--spacing"), _duration_range(args.duration, "--duration")
    started = time.monotonic()
    print(f"recording shops {', '.join(map(str, seeds))} into {args.out} ({args.faults} faults each)", file=sys.stderr)
    stop = threading.Event()  # SIGINT or SIGTERM: every shop's processes stopped, none left behind
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        done = await asyncio.to_thread(record, seeds, args.out, faults=args.faults, warmup=parse_duration(args.warmup),
                                       tail=parse_duration(args.tail), rate=args.rate, spacing=spacing, duration=duration,
                                       parallel=args.parallel, stop=stop,
                                       progress=lambda line: print(line, file=sys.stderr, flush=True))  # fmt: skip
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if stop.is_set():
        print(f"stopped by a signal: {len(done)} of {len(seeds)} shops recorded, the others' processes stopped",
              file=sys.stderr)  # fmt: skip
        return 130
    print(f"recorded {len(done)} of {len(seeds)} shops in {time.monotonic() - started:.0f} s; "
          f"evaluate: rcabot eval {args.out} --engine lats,baro,linear-multi")  # fmt: skip
    return 0 if len(done) == len(seeds) else 1


def _duration_range(text: str, flag: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    a, b = parse_duration(low), parse_duration(high or low)
    if b < a:
        raise InputError(f"{flag}: {text!r} ends before it starts")
    return a, b


async def _worker() -> int:
    from bot.worker import serve_worker  # the queue's client: only for `worker`

    settings = read_settings()
    os.nice(settings.worker_nice)  # investigations are batch work: a replica's acks on this machine come first
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # running jobs are cancelled and go back to the queue
        loop.add_signal_handler(sig, stop.set)
    print(f"rcabot worker: {settings.workers} investigation(s) at a time from the job queue", file=sys.stderr, flush=True)
    await serve_worker(settings, stop=stop)
    return 0


def _cases(path: Path) -> int:
    found = find_cases(path)
    print(f"{'case':<52} {'symptom':<24} {'metrics':>7} {'logs':>5} {'traces':>6}  label")
    for c in found:
        m = c.incident.sources.modalities()
        flags = ["yes" if m[k] else "-" for k in ("metrics", "logs", "traces")]
        label = f"{c.label.service} ({c.label.fault_type})"
        print(
            f"{c.id:<52} {c.incident.symptom:<24} {flags[0]:>7} {flags[1]:>5} {flags[2]:>6}  {label}"
        )
    print(f"{len(found)} labelled case(s)")
    return 0


async def _investigate(args: argparse.Namespace) -> int:
    incident, _ = await _incident_from(args)
    engine = build_engine(args.engine, reasoner=_reasoner(args), read_budget=args.budget)
    diagnosis = await run_live(engine, incident, live=not (args.json or args.quiet))
    if args.json:
        print(json.dumps(diagnosis.trace or _ranking_json(incident, diagnosis), indent=2))
    else:
        print(render_diagnosis(incident, diagnosis))
        if diagnosis.trace is not None:
            print()
            print(render_audit(await _audit_incident(incident, diagnosis.trace)))
    return 0


async def _audit_incident(incident: Incident, trace: Mapping[str, Any]) -> Audit:
    return audit(from_json(dict(trace)), await audit_context(incident))


def _read_trace(path: Path) -> Trace:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON trace ({exc})") from exc
    try:
        return from_json(doc)
    except jsonschema.ValidationError as exc:
        raise InputError(f"{path}: not a valid trace: {exc.message}") from exc


async def _repair(args: argparse.Namespace) -> int:
    trace = _read_trace(args.trace)
    incident = await replay_incident(find_recordings(args.data), symptom=trace.symptom, window=trace.evidence_package.window)
    ctx = RepairContext(await audit_context(incident), recollector(incident))
    memory = SqlRepairMemory(args.memory)
    try:
        result = await repair(trace, ctx, RepairConfig(), memory)
    finally:
        memory.close()
    for step in result.steps:
        print(f"round {step.round} {step.route}: {step.stage} <- {step.patch}  S {step.before:.2f} -> {step.after:.2f}",
              file=sys.stderr)  # fmt: skip
    print(f"S {result.before.score:.2f} -> {result.after.score:.2f}, decisive stage {result.decisive_stage}, "
          f"{result.replays} replays" + (", verification first" if result.verification_first else ""), file=sys.stderr)  # fmt: skip
    text = json.dumps(trace_json(result.trace), indent=2)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


async def _verify(args: argparse.Namespace) -> int:
    trace = _read_trace(args.trace)
    incident = await replay_incident(find_recordings(args.data), symptom=trace.symptom, window=trace.evidence_package.window)
    run = await run_tests(trace, Toolbox(incident))
    if args.json:
        print(json.dumps(run.to_json(), indent=2))
    else:
        print(render_verification(run))
    return 0


async def _audit(args: argparse.Namespace) -> int:
    trace = _read_trace(args.trace)
    if args.data:
        incident = await replay_incident(find_recordings(args.data), symptom=trace.symptom, window=trace.evidence_package.window)
        ctx = await audit_context(incident)
    else:  # without the data, the calls the trace itself names are the graph
        ctx = AuditContext(nx.DiGraph([(ln.target, ln.source) for c in trace.chains for ln in c.links]))
        print("note: no --data, the call graph is read from the trace's own chains", file=sys.stderr)
    print(json.dumps(audit(trace, ctx).to_json(), indent=2))
    return 0


async def run_live(engine: Engine, incident: Incident, *, live: bool) -> Diagnosis:
    """Run an engine, printing its progress stream to stderr when it has one."""
    if not (live and isinstance(engine, SearchEngine)):
        return await engine.investigate(incident)
    trace: dict | None = None
    async for event in engine.stream(incident):
        line = render_event(event)
        if line:
            print(line, file=sys.stderr, flush=True)
        if isinstance(event, Finished):
            trace = event.trace
    assert trace is not None
    return diagnosis_of(incident, engine.name, trace)


def _ranking_json(incident: Incident, diagnosis: Diagnosis) -> dict:
    """For an engine without a trace (BARO): its ranking."""
    return {
        "incident": incident.id,
        "symptom": incident.symptom,
        "window": incident.window.to_iso(),
        "engine": diagnosis.engine,
        "ranking": [
            {"service": c.service, "score": c.score, "fault_type": c.fault_type.value, "evidence": list(c.evidence)}
            for c in diagnosis.ranking
        ],
        "missing": list(diagnosis.missing),
        "seconds": diagnosis.cost.seconds,
    }


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are whole numbers separated by commas, not {text!r}") from None


BUDGET_HELP = ("telemetry reads a search may make (one metrics query reads every service; a logs or "
               "traces read covers one service; repeats are free); spent, it decides on what it read")


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


async def _eval(args: argparse.Namespace) -> int:
    reasoner = _reasoner(args)
    budget = args.budget
    engines = [build_engine(n, reasoner=reasoner, read_budget=budget) for n in args.engine.split(",") if n.strip()]
    engines += [build_engine("lats", ablation=a.strip(), reasoner=reasoner, read_budget=budget)
                for a in args.ablate.split(",") if a.strip()]  # fmt: skip
    if args.repair:
        engines += [build_engine(n, repair=True, reasoner=reasoner, read_budget=budget)
                    for n in args.engine.split(",") if n.strip() in VARIANTS]  # fmt: skip
    engines += [build_engine(n.strip(), reasoner=reasoner, seed=seed, read_budget=budget) for seed in args.seeds
                for n in args.engine.split(",") if n.strip() in VARIANTS]  # fmt: skip
    protocol = parse_protocol(args.protocol, args.hide, resample=args.resample, vocabulary=args.vocabulary,
                              fleet=args.fleet, drift=args.drift)  # fmt: skip
    broken: list[BrokenCase] = []
    cases = [c for c in find_cases(args.path, broken=broken) if args.match in c.id]
    broken = [b for b in broken if args.match in b.id]
    results = await evaluate(engines, cases, protocol=protocol, progress=ProgressBar(), broken=broken,
                             audit=args.audit)  # fmt: skip
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


def _report(args: argparse.Namespace) -> int:
    table = results_rows(saved(args.results))
    if args.plot:
        args.plot.write_bytes(plot(table))
    text = page(table, plot_name=os.path.relpath(args.plot, args.out.parent) if args.plot and args.out else None)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out} ({len(table)} rows from {args.results})")
    else:
        print(text, end="")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    rows = []
    for path in args.results:
        try:
            rows += calibration_rows(json.loads(path.read_text()), args.engine)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{path}: not an `rcabot eval --json` result ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise InputError(f"no first places of {args.engine} in {', '.join(str(p) for p in args.results)}")
    sets = sorted({d for d, *_ in rows})
    calibration = fit([(f, ok) for *_, f, ok in rows],
                      fitted_on=f"{len(rows)} first places of {args.engine}: {', '.join(sets)}; "
                                f"protocols {' | '.join(sorted({p for _, p, *_ in rows}))}")  # fmt: skip
    print(render_fit(rows, calibration))
    print(f"likely from p >= {calibration.likely:.3f}; weights {', '.join(f'{w:.3f}' for w in calibration.weights)}")
    if args.out:
        args.out.write_text(json.dumps(calibration.to_json(), indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


async def _demo() -> int:
    cases = find_cases(embedded_data())
    case = cases[0]
    print(f"Investigating the embedded incident {case.id} (TrainTicket, Nezha's data, MIT licence)")
    incident = case.incident
    diagnosis = await run_live(build_engine("lats"), incident, live=True)
    print(render_diagnosis(incident, diagnosis))
    if diagnosis.trace is not None:
        print()
        print(render_audit(await _audit_incident(incident, diagnosis.trace)))
    print(f"\nInjected fault (kept from the engine): {case.label.service}, {case.label.fault_type}")
    return 0


async def _backfill(args: argparse.Namespace) -> int:
    cases = [c for c in find_cases(args.data) if args.match in c.id]
    if not cases:
        raise InputError(f"no case under {args.data} matches {args.match!r}")
    from bot.backfill import export_case

    om, mapping, span = await export_case(cases[0], args.out)
    print(f"{cases[0].id}: {om} ({span.to_iso()}) and {mapping}")
    print(f"next: promtool tsdb create-blocks-from openmetrics {om} DATA_DIR")
    return 0


async def _console(args: argparse.Namespace) -> int:
    from bot.console import PROMPT, Console  # the desk, its charts and the console: only here
    from bot.desk import Desk

    settings = read_settings()
    data = args.data or settings.data
    now = parse_timestamp(args.at) if args.at else settings.now
    store = Store(args.db or settings.db)
    memory = SqlRepairMemory(args.db or settings.db)
    desk = Desk(telemetry=telemetry_from(data=data, now=now, live=settings.live), store=store, memory=memory, engine=settings.engine,
                workers=settings.workers, reasoner=_reasoner(args), time_budget=settings.time_budget)  # fmt: skip

    async def read() -> str | None:
        try:
            return await asyncio.to_thread(input, PROMPT)
        except EOFError:
            return None

    try:
        await Console(desk, read=read, write=print).run()
    finally:
        desk.close()
        store.close()
        memory.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
