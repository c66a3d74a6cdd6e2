"""Ack latency under load: 50 signed `/rca` requests at `rcabot serve` (HTTP mode), all at
once, then again spread over a few seconds so that later ones land while investigations run.

The app runs as its own process, exactly as deployed, pointed by SLACK_API_URL at a local
stand-in of Slack's Web API; this process fires the requests, times each acknowledgement, and
waits until every investigation has posted its verdict.

    .venv/bin/python -m bench.slack_ack [--requests 50] [--workers 2] [--spread 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from tests.bot.slack_standin import (
    SlackStandIn,
    command_body,
    free_port,
    serve_process,
    sign,
    wait_until_up,
)

SECRET = "bench-signing-secret"
ROOT = Path(__file__).resolve().parent.parent


async def main(requests: int, workers: int, spread: float) -> int:
    slack = SlackStandIn()
    await slack.start()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        app = serve_process(slack, secret=SECRET, port=port, db=Path(tmp) / "bench.db", workers=workers)
        try:
            url = f"http://127.0.0.1:{port}/slack/events"
            await wait_until_up(port)
            async with aiohttp.ClientSession() as session:
                started = time.monotonic()
                delay = spread / requests
                acks = await asyncio.gather(*[_fire(session, url, slack, i, i * delay) for i in range(requests)])
            statuses = {s for s, _ in acks}
            latencies = sorted(ms for _, ms in acks)
            await slack.wait_for(lambda c: _verdicts(slack) >= requests, timeout=600)
            total = time.monotonic() - started
        finally:
            app.terminate()
            app.wait(timeout=30)
            await slack.stop()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(round(0.99 * (len(latencies) - 1))))]
    print(f"{requests} signed /rca requests over {spread:.1f} s, {workers} investigation workers")
    print(f"ack status codes: {sorted(statuses)}")
    print(f"ack latency ms: p50 {p50:.1f}  p99 {p99:.1f}  max {latencies[-1]:.1f}  (target p99 < 300)")
    print(f"verdicts posted: {_verdicts(slack)}/{requests}; all investigations done in {total:.1f} s")
    return 0 if statuses == {200} and p99 < 300 and _verdicts(slack) >= requests else 1


def _verdicts(slack: SlackStandIn) -> int:
    return sum(1 for c in slack.of("chat.postMessage") if "rca_repair" in str(c.params.get("blocks")))


async def _fire(
    session: aiohttp.ClientSession, url: str, slack: SlackStandIn, i: int, delay: float
) -> tuple[int, float]:
    await asyncio.sleep(delay)
    text, ctype = command_body(
        "Frontend 10m",
        response_url=slack.response_url(f"r{i}"),
        channel=f"C{i:05d}",
        trigger_id=f"bench.{i}.{time.time_ns()}",
    )
    headers = {"Content-Type": ctype, **sign(SECRET, text)}
    t0 = time.monotonic()
    async with session.post(url, data=text.encode(), headers=headers) as r:
        await r.read()
        return r.status, (time.monotonic() - t0) * 1000


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--spread", type=float, default=0.0, help="seconds over which the requests are sent")
    args = ap.parse_args()
    raise SystemExit(asyncio.run(main(args.requests, args.workers, args.spread)))
