"""Load: 200 signed `/rca` commands from 20 simulated channels within a minute at `rcabot serve`.

The app runs as its own process (HTTP mode, the embedded incident replayed) against a local
stand-in of Slack's Web API. Reports: commands acked and within 3 s, ack p50/p99, investigations
completed, duplicate posts, the server's peak RSS, and the database's integrity and row counts.

    .venv/bin/python -m bench.slack_load [--requests 200] [--channels 20] [--within 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp

from bench.slack_ack import SECRET
from bot.backfill import free_port
from bot.telemetry import ReplayTelemetry, embedded_data
from tests.bot.slack_standin import SlackStandIn, command_body, serve_process, sign, wait_until_up

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a process: the most resident memory it has used."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(requests: int, channels: int, within: float, workers: int) -> int:
    services = [s for s in await ReplayTelemetry(embedded_data()).services() if s.startswith("ts-")]
    slack = SlackStandIn()
    await slack.start()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "load.db"
        app = serve_process(slack, secret=SECRET, port=port, db=db, workers=workers)
        rss = 0.0
        try:
            await wait_until_up(port)
            url = f"http://127.0.0.1:{port}/slack/events"
            started = time.monotonic()
            async with aiohttp.ClientSession() as session:

                async def fire(i: int) -> tuple[int, float]:
                    await asyncio.sleep(i * within / requests)
                    service = services[(i // channels) % len(services)]  # each channel asks about ten services
                    text, ctype = command_body(f"{service} 10m", response_url=slack.response_url(f"r{i}"),
                                               channel=f"C{i % channels:04d}", trigger_id=f"load.{i}.{time.time_ns()}")  # fmt: skip
                    t0 = time.monotonic()
                    async with session.post(url, data=text.encode(), headers={"Content-Type": ctype, **sign(SECRET, text)}) as r:
                        await r.read()
                        return r.status, (time.monotonic() - t0) * 1000

                acks = await asyncio.gather(*(fire(i) for i in range(requests)))
            fired = time.monotonic() - started
            while True:  # until every started investigation has posted its verdict, or ten minutes
                rss = max(rss, peak_rss_mib(app.pid))
                if _verdicts(slack) >= requests or time.monotonic() - started > 600:
                    break
                await asyncio.sleep(1.0)
            total = time.monotonic() - started
        finally:
            app.terminate()
            app.wait(timeout=60)
            await slack.stop()
        with sqlite3.connect(db) as conn:
            integrity = conn.execute("pragma integrity_check").fetchone()[0]
            statuses = dict(conn.execute("select status, count(*) from investigations group by status").fetchall())
    latencies = sorted(ms for _, ms in acks)
    p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
    parents = Counter(str(c.params.get("channel")) + str(c.params.get("text")) for c in slack.of("chat.postMessage")
                      if not c.params.get("thread_ts"))  # fmt: skip
    verdict_threads = Counter(c.params.get("thread_ts") for c in slack.of("chat.postMessage") if "rca_repair" in str(c.params.get("blocks")))
    duplicates = sum(n - 1 for n in parents.values() if n > 1) + sum(n - 1 for n in verdict_threads.values() if n > 1)
    print(f"{requests} signed /rca from {channels} channels over {fired:.0f} s, {workers} investigation workers")
    print(f"acked: {sum(s == 200 for s, _ in acks)}/{requests}, within 3 s: {sum(ms < 3000 for _, ms in acks)}; "
          f"ack ms p50 {statistics.median(latencies):.0f}, p99 {p99:.0f}, max {latencies[-1]:.0f}")  # fmt: skip
    print(f"investigations completed: {_verdicts(slack)}/{requests} in {total:.0f} s; duplicate posts: {duplicates}")
    print(f"server peak RSS: {rss:.0f} MiB; database: integrity {integrity}, rows by status {statuses}")
    ok = (all(s == 200 for s, _ in acks) and max(latencies) < 3000 and _verdicts(slack) >= requests
          and duplicates == 0 and integrity == "ok")  # fmt: skip
    return 0 if ok else 1


def _verdicts(slack: SlackStandIn) -> int:
    return sum(1 for c in slack.of("chat.postMessage") if "rca_repair" in str(c.params.get("blocks")))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--channels", type=int, default=20)
    ap.add_argument("--within", type=float, default=60.0, help="seconds over which the commands are sent")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    raise SystemExit(asyncio.run(main(args.requests, args.channels, args.within, args.workers)))
