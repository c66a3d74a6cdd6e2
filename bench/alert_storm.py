"""How fast the Alertmanager webhook answers during a storm, with the investigations it starts
running in the same process.

500 notifications in 10 alert groups (each a service of the embedded TrainTicket incident, each
notification one alert larger than the last, as Alertmanager sends them) arrive at 50 a second
on the real app; 10 investigations start. Prints the answer latency's median, 99th percentile
and maximum, and whether every notification was counted. One process, SQLite; run it several
times (the machine is shared) and quote medians.

    .venv/bin/python -m bench.alert_storm [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tests.bot.alertmanager_payloads import alert, notification
from tests.bot.test_alerts import CHANNEL, deliver, settings
from tests.bot.test_slack_app import running
from tests.conftest import NEZHA_SLICE

SERVICES = [
    "ts-contacts-service",
    "ts-order-service",
    "ts-route-service",
    "ts-user-service",
    "ts-basic-service",
    "ts-food-service",
    "ts-seat-service",
    "ts-travel-service",
    "ts-station-service",
    "ts-price-service",
]


async def storm(tmp: Path) -> tuple[list[float], bool]:
    async with running(tmp, NEZHA_SLICE, settings_=settings(tmp)) as (bot, _slack, url):
        now = time.time()
        bodies = [
            notification(
                {"alertname": "Errors", "service": svc},
                [alert({"alertname": "Errors", "service": svc, "pod": f"p{j}"}, starts=now - 60) for j in range(i + 1)],
            )
            for i in range(50)
            for svc in SERVICES
        ]

        async def later(i: int, body: bytes) -> tuple[int, float]:
            await asyncio.sleep(i * 0.02)
            return await deliver(url, body)

        answers = await asyncio.gather(*(later(i, b) for i, b in enumerate(bodies)))
        await bot.alerts.drain()
        counted = sum(g.notifications for g in bot.alerts.store.groups(channel=CHANNEL)) == len(bodies)
        return [t for status, t in answers if status == 200], counted and all(s == 200 for s, _ in answers)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for r in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            latencies, whole = asyncio.run(storm(Path(tmp)))
        latencies.sort()
        p99 = latencies[int(0.99 * (len(latencies) - 1))]
        print(
            f"round {r}: {len(latencies)} answered, median {statistics.median(latencies) * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; every notification counted: {whole}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
