"""Load: 200 signed `/rca` commands from 20 simulated channels within a minute at `rcabot serve`.

The app runs as its own process (HTTP mode, the embedded incident replayed) against a local
stand-in of Slack's Web API. Reports: commands acked and within 3 s, ack p50/p99, investigations
completed, duplicate posts, the server's peak RSS, and the database's integrity and row counts.

With `--replicas N --queue-workers M` it runs N `rcabot serve` replicas (the commands spread
over them, as a load balancer would) and M `rcabot worker` processes, sharing the PostgreSQL
record (`--postgres`, a fresh schema) and the Redis job queue (`--redis`, flushed first).

    .venv/bin/python -m bench.slack_load [--requests 200] [--channels 20] [--within 60] [--workers 2]
    .venv/bin/python -m bench.slack_load --replicas 2 --queue-workers 2 \
        [--postgres postgresql://postgres@127.0.0.1/test] [--redis redis://127.0.0.1:6379/6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import aiohttp

from bench.slack_ack import SECRET
from bot.telemetry import ReplayTelemetry, embedded_data
from lab.processes import free_port
from tests.bot.slack_standin import SlackStandIn, command_body, serve_process, sign, wait_until_up

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a process: the most resident memory it has used."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(
    requests: int,
    channels: int,
    within: float,
    workers: int,
    replicas: int = 1,
    queue_workers: int = 0,
    postgres: str = "",
    redis_url: str = "",
) -> int:
    services = [s for s in await ReplayTelemetry(embedded_data()).services() if s.startswith("ts-")]
    slack = SlackStandIn()
    await slack.start()
    ports = [free_port() for _ in range(replicas)]
    queued = queue_workers > 0
    with tempfile.TemporaryDirectory() as tmp:
        schema = f"rcabot_load_{uuid.uuid4().hex[:8]}"
        db: Path | str = Path(tmp) / "load.db"
        extra: dict[str, str] = {}
        if queued:
            import psycopg
            import redis

            with psycopg.connect(postgres, autocommit=True) as admin:
                admin.execute(f"create schema {schema}")
            db = f"{postgres}?options={quote(f'-csearch_path={schema}')}"
            redis.Redis.from_url(redis_url).flushdb()
            extra = {"RCABOT_QUEUE": redis_url}
        apps = [serve_process(slack, secret=SECRET, port=port, db=db, workers=workers, extra=extra) for port in ports]  # type: ignore[arg-type]
        pool = [_worker_process(str(db), redis_url, workers) for _ in range(queue_workers)]
        rss = 0.0
        try:
            for port in ports:
                await wait_until_up(port)
            urls = [f"http://127.0.0.1:{port}/slack/events" for port in ports]
            started = time.monotonic()
            async with aiohttp.ClientSession() as session:

                async def fire(i: int) -> tuple[int, float]:
                    await asyncio.sleep(i * within / requests)
                    service = services[(i // channels) % len(services)]  # each channel asks about ten services
                    text, ctype = command_body(
                        f"{service} 10m",
                        response_url=slack.response_url(f"r{i}"),
                        channel=f"C{i % channels:04d}",
                        trigger_id=f"load.{i}.{time.time_ns()}",
                    )
                    t0 = time.monotonic()
                    url = urls[i % len(urls)]  # a load balancer's round robin
                    async with session.post(
                        url, data=text.encode(), headers={"Content-Type": ctype, **sign(SECRET, text)}
                    ) as r:
                        await r.read()
                        return r.status, (time.monotonic() - t0) * 1000

                acks = await asyncio.gather(*(fire(i) for i in range(requests)))
            fired = time.monotonic() - started
            while True:  # until every started investigation has posted its verdict, or ten minutes
                rss = max(rss, *(peak_rss_mib(a.pid) for a in apps))
                if _verdicts(slack) >= requests or time.monotonic() - started > 600:
                    break
                await asyncio.sleep(1.0)
            total = time.monotonic() - started
        finally:
            for a in [*apps, *pool]:
                a.terminate()
                a.wait(timeout=60)
            await slack.stop()
        if queued:
            import psycopg

            with psycopg.connect(postgres, autocommit=True) as admin:
                integrity = "ok (PostgreSQL)"
                statuses = dict(
                    admin.execute(f"select status, count(*) from {schema}.investigations group by status").fetchall()
                )
                admin.execute(f"drop schema {schema} cascade")
        else:
            with sqlite3.connect(db) as conn:
                integrity = conn.execute("pragma integrity_check").fetchone()[0]
                statuses = dict(conn.execute("select status, count(*) from investigations group by status").fetchall())
    latencies = sorted(ms for _, ms in acks)
    p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
    parents = Counter(
        str(c.params.get("channel")) + str(c.params.get("text"))
        for c in slack.of("chat.postMessage")
        if not c.params.get("thread_ts")
    )
    verdict_threads = Counter(
        c.params.get("thread_ts") for c in slack.of("chat.postMessage") if "rca_repair" in str(c.params.get("blocks"))
    )
    duplicates = sum(n - 1 for n in parents.values() if n > 1) + sum(n - 1 for n in verdict_threads.values() if n > 1)
    where = (
        f"{replicas} replica(s), {queue_workers} queue worker(s) x {workers}, PostgreSQL + Redis"
        if queued
        else f"one process, {workers} investigation workers, SQLite"
    )
    print(f"{requests} signed /rca from {channels} channels over {fired:.0f} s; {where}")
    print(
        f"acked: {sum(s == 200 for s, _ in acks)}/{requests}, within 3 s: {sum(ms < 3000 for _, ms in acks)}; "
        f"ack ms p50 {statistics.median(latencies):.0f}, p99 {p99:.0f}, max {latencies[-1]:.0f}"
    )
    print(f"investigations completed: {_verdicts(slack)}/{requests} in {total:.0f} s; duplicate posts: {duplicates}")
    print(f"server peak RSS: {rss:.0f} MiB; database: integrity {integrity}, rows by status {statuses}")
    ok = (
        all(s == 200 for s, _ in acks)
        and max(latencies) < 3000
        and _verdicts(slack) >= requests
        and duplicates == 0
        and integrity.startswith("ok")
    )
    return 0 if ok else 1


def _worker_process(db: str, queue: str, workers: int) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "RCABOT_DATA")},
        "RCABOT_DB": db,
        "RCABOT_QUEUE": queue,
        "RCABOT_NOW": "2023-01-29T13:36:00Z",
        "RCABOT_WORKERS": str(workers),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "worker"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _verdicts(slack: SlackStandIn) -> int:
    return sum(1 for c in slack.of("chat.postMessage") if "rca_repair" in str(c.params.get("blocks")))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--channels", type=int, default=20)
    ap.add_argument("--within", type=float, default=60.0, help="seconds over which the commands are sent")
    ap.add_argument("--workers", type=int, default=2, help="investigations at once, per process that runs them")
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--queue-workers", type=int, default=0, help="rcabot worker processes (0: no job queue)")
    ap.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/6")
    args = ap.parse_args()
    raise SystemExit(
        asyncio.run(
            main(
                args.requests,
                args.channels,
                args.within,
                args.workers,
                args.replicas,
                args.queue_workers,
                args.postgres,
                args.redis,
            )
        )
    )
