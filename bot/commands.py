"""What each `rcabot` command does, but the measuring ones (bot.measuring): bot.cli reads the
command line and calls one of these."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import networkx as nx

from bot.config import LiveConfig, check_url, read_settings, reasoner_of
from bot.telemetry import embedded_data, telemetry_from
from bot.terminal import (
    render_audit,
    render_diagnosis,
    render_event,
    render_verification,
)
from rca.changes import write_changes
from rca.engines import Engine, build_engine
from rca.engines.lats import SearchEngine, diagnosis_of
from rca.errors import InputError, RcaError
from rca.evidence.toolbox import Toolbox
from rca.model import Diagnosis, Incident
from rca.replay import replay_incident
from rca.search.events import Finished
from rca.sources.change_files import CHANGES_FILE
from rca.sources.datasets import find_cases, find_recordings
from rca.sources.prometheus_changes import PrometheusChanges
from rca.sources.snapshot import write_snapshot
from rca.star.audit import Audit, audit
from rca.star.context import audit_context
from rca.star.criteria import AuditContext
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, repair
from rca.star.verify import run_tests
from rca.timestamps import parse_timestamp
from rca.trace import Trace
from rca.trace_json import from_json
from rca.trace_json import to_json as trace_json
from storage.investigations import Store
from storage.repair_memory import SqlRepairMemory


async def _incident_from(args: argparse.Namespace) -> tuple[Incident, LiveConfig]:
    """The incident a command's service, window and source options name."""
    settings = read_settings()
    given = {
        "prometheus_url": args.prometheus,
        "prom_mapping": args.prom_mapping,
        "loki_url": args.loki,
        "log_dir": args.logs,
        "jaeger_url": args.jaeger,
        "otlp": args.otlp,
        "topology": args.topology,
    }
    for name, flag in (("prometheus_url", "--prometheus"), ("loki_url", "--loki"), ("jaeger_url", "--jaeger")):
        check_url(flag, str(given[name] or ""))
    live = replace(settings.live, **{k: v for k, v in given.items() if v})
    data = args.data or settings.data
    if data is None and not live.any:
        raise InputError(
            "give --data PATH (a recording) or a live backend (--prometheus, --loki, --logs, --jaeger, --otlp)"
        )
    now = parse_timestamp(args.at) if args.at else settings.now
    absolute = "/" in args.window or ".." in args.window  # an ISO range needs no "now"
    if now is None and data is not None and not absolute:
        print("note: --at not given, replaying at the end of the recorded data", file=sys.stderr)
    telemetry = telemetry_from(data=data, now=now, live=live)
    return await telemetry.incident(args.service, await telemetry.window(args.window)), live


async def do_worker() -> int:
    from bot.worker import serve_worker  # the queue's client: only for `worker`

    settings = read_settings()
    os.nice(settings.worker_nice)  # investigations are batch work: a replica's acks on this machine come first
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # running jobs are cancelled and go back to the queue
        loop.add_signal_handler(sig, stop.set)
    print(
        f"rcabot worker: {settings.workers} investigation(s) at a time from the job queue", file=sys.stderr, flush=True
    )
    await serve_worker(settings, stop=stop)
    return 0


def do_cases(path: Path) -> int:
    found = find_cases(path)
    print(f"{'case':<52} {'symptom':<24} {'metrics':>7} {'logs':>5} {'traces':>6}  label")
    for c in found:
        m = c.incident.sources.modalities()
        flags = ["yes" if m[k] else "-" for k in ("metrics", "logs", "traces")]
        label = f"{c.label.service} ({c.label.fault_type})"
        print(f"{c.id:<52} {c.incident.symptom:<24} {flags[0]:>7} {flags[1]:>5} {flags[2]:>6}  {label}")
    print(f"{len(found)} labelled case(s)")
    return 0


async def do_investigate(args: argparse.Namespace) -> int:
    incident, _ = await _incident_from(args)
    engine = build_engine(args.engine, reasoner=reasoner_of(args), read_budget=args.budget)
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


async def do_repair(args: argparse.Namespace) -> int:
    trace = _read_trace(args.trace)
    incident = await replay_incident(
        find_recordings(args.data), symptom=trace.symptom, window=trace.evidence_package.window
    )
    ctx = RepairContext(await audit_context(incident), recollector(incident))
    memory = SqlRepairMemory(args.memory)
    try:
        result = await repair(trace, ctx, RepairConfig(), memory)
    finally:
        memory.close()
    for step in result.steps:
        print(
            f"round {step.round} {step.route}: {step.stage} <- {step.patch}  S {step.before:.2f} -> {step.after:.2f}",
            file=sys.stderr,
        )
    print(
        f"S {result.before.score:.2f} -> {result.after.score:.2f}, decisive stage {result.decisive_stage}, "
        f"{result.replays} replays" + (", verification first" if result.verification_first else ""),
        file=sys.stderr,
    )
    text = json.dumps(trace_json(result.trace), indent=2)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


async def do_verify(args: argparse.Namespace) -> int:
    trace = _read_trace(args.trace)
    incident = await replay_incident(
        find_recordings(args.data), symptom=trace.symptom, window=trace.evidence_package.window
    )
    run = await run_tests(trace, Toolbox(incident))
    if args.json:
        print(json.dumps(run.to_json(), indent=2))
    else:
        print(render_verification(run))
    return 0


async def do_audit(args: argparse.Namespace) -> int:
    trace = _read_trace(args.trace)
    if args.data:
        incident = await replay_incident(
            find_recordings(args.data), symptom=trace.symptom, window=trace.evidence_package.window
        )
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


async def do_demo() -> int:
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


async def do_backfill(args: argparse.Namespace) -> int:
    cases = [c for c in find_cases(args.data) if args.match in c.id]
    if not cases:
        raise InputError(f"no case under {args.data} matches {args.match!r}")
    from bot.backfill import export_case

    om, mapping, span = await export_case(cases[0], args.out)
    print(f"{cases[0].id}: {om} ({span.to_iso()}) and {mapping}")
    print(f"next: promtool tsdb create-blocks-from openmetrics {om} DATA_DIR")
    return 0


async def do_console(args: argparse.Namespace) -> int:
    from bot.changes import ChangedTelemetry, change_feed
    from bot.console import PROMPT, Console  # the desk, its charts and the console: only here
    from bot.desk import Desk

    settings = read_settings()
    data = args.data or settings.data
    now = parse_timestamp(args.at) if args.at else settings.now
    store = Store(args.db or settings.db)
    memory = SqlRepairMemory(args.db or settings.db)
    telemetry = telemetry_from(data=data, now=now, live=settings.live)
    desk = Desk(
        telemetry=ChangedTelemetry(telemetry, change_feed(replace(settings, data=data), telemetry, db=args.db)),
        store=store,
        memory=memory,
        engine=settings.engine,
        workers=settings.workers,
        reasoner=reasoner_of(args),
        time_budget=settings.time_budget,
    )

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


async def do_serve() -> int:
    from bot.app import serve  # the Slack app and its HTTP server: only for `serve`

    await serve(read_settings())
    return 0


async def do_snapshot(args: argparse.Namespace) -> int:
    incident, live = await _incident_from(args)
    origin = {
        k: str(v)
        for k, v in (
            ("data", args.data),
            ("prometheus", live.prometheus_url),
            ("loki", live.loki_url),
            ("logs", live.log_dir),
            ("jaeger", live.jaeger_url),
            ("otlp", live.otlp),
        )
        if v
    }
    out = await write_snapshot(incident, args.out, origin=origin, created=time.time())
    if live.prometheus_url:  # what changed, as Prometheus records it, kept for the replay
        try:
            changed = await PrometheusChanges(live.prometheus_url, timeout=live.timeout).changes(incident.window)
            write_changes(changed, out / CHANGES_FILE)
        except RcaError as exc:
            print(f"changes not saved: {exc}", file=sys.stderr)
    print(
        f"saved {incident.symptom} {incident.window.to_iso()} to {out}; replay: "
        f"rcabot investigate {incident.symptom} {incident.window.to_iso()} --data {out}"
    )
    return 0
