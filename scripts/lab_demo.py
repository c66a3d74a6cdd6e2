"""`make lab-demo`: break a live shop and watch rcabot find it, offline, on this machine.

A seeded shop of five real services comes up (each its own process), Debian's Prometheus
scrapes it and evaluates the lab's alert rules, Debian's Alertmanager routes what fires to the
bot's own webhook route. After four minutes of normal load a CPU hog is injected into one service.
When the alert arrives, the console investigates it over the live Prometheus, the services'
log files and their traces, and prints the stream and the verdict. Then everything stops.

    python scripts/lab_demo.py [--seed N] [--family cpu|memory|latency|error|...]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web

from bot.config import LiveConfig
from bot.console import Console
from bot.desk import Desk
from bot.telemetry import LiveTelemetry
from handlers.alerts import Notification, alertmanager_webhook
from lab.alerting import alertmanager, alertmanager_binary, alertmanager_config, prometheus_alerting
from lab.faults import FAMILIES, PlannedFault, can_suffer
from lab.processes import binaries, free_port
from lab.record import inject, load, mapping_file, running
from lab.shop import draw_shop
from storage.investigations import Store
from storage.repair_memory import SqlRepairMemory

TOKEN = "lab-demo-token"
WARMUP = 240.0  # seconds of normal load: the normal the 3-minute window is compared with


async def demo(seed: int, family: str, tmp: Path) -> int:
    shop = draw_shop(seed, size=5)
    victim = random.Random(f"demo-{seed}").choice([s.name for s in shop.services if can_suffer(shop, s.name, family)])
    port = free_port()
    alerts: asyncio.Queue[Notification] = asyncio.Queue()
    app = web.Application()
    app.router.add_post("/alerts/alertmanager", alertmanager_webhook((f"Bearer {TOKEN}",), alerts.put_nowait))
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    config = alertmanager_config(f"http://127.0.0.1:{port}/alerts/alertmanager", TOKEN)
    with (
        alertmanager(tmp / "am", config) as am_url,
        running(shop, tmp / "run", prometheus_extra=prometheus_alerting(tmp / "run", am_url)) as lab,
    ):
        calls = ", ".join(f"{a} -> {b}" for a, b in shop.edges())
        print(f"shop {seed}: {len(shop.services)} services, entry {shop.entry}; calls {calls}")
        print(f"Prometheus {lab.prometheus} (scraping every 5 s, alert rules loaded), Alertmanager {am_url}")
        loader = asyncio.create_task(load(lab, time.time() + 900, rate=8.0, seed=seed))
        print(f"{WARMUP:.0f} s of normal load...", flush=True)
        await asyncio.sleep(WARMUP)
        await inject(lab, PlannedFault(0.0, 600.0, victim, family))
        print(f"injected: {family} on {victim} (the label; rcabot is not told)", flush=True)
        try:
            n = await asyncio.wait_for(alerts.get(), timeout=240)
        except TimeoutError:
            print("no alert fired within 4 minutes: the rules did not see the fault", file=sys.stderr)
            loader.cancel()
            await runner.cleanup()
            return 1
        service = n.labels.get("service") or next((a.labels.get("service", "") for a in n.alerts), shop.entry)
        print(f"\n🚨 {n.labels.get('alertname', 'alert')} ({n.severity}): {n.summary}\n", flush=True)
        telemetry = LiveTelemetry(
            LiveConfig(
                prometheus_url=lab.prometheus,
                prom_mapping=mapping_file(),
                log_dir=lab.workdir / "logs",
                otlp=lab.workdir / "traces",
            )
        )
        store, memory = Store(tmp / "rcabot.db"), SqlRepairMemory(tmp / "rcabot.db")
        desk = Desk(telemetry=telemetry, store=store, memory=memory, engine="lats", workers=1)
        try:
            await Console(desk, read=_nothing, write=print, charts=tmp).handle(f"/rca {service} 3m")
        finally:
            desk.close()
            store.close()
            memory.close()
            loader.cancel()
            await runner.cleanup()
        print(f"\nThe label: {family} on {victim}. Everything is stopping; nothing is left behind.")
    return 0


async def _nothing() -> str | None:
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0, help="which shop (default 0)")
    p.add_argument("--family", choices=FAMILIES, default="cpu", help="the fault to inject (default cpu)")
    args = p.parse_args()
    if binaries() is None or alertmanager_binary() is None:
        print(
            "prometheus or alertmanager is not installed: run scripts/ensure-prometheus.sh (as root)", file=sys.stderr
        )
        return 1
    with tempfile.TemporaryDirectory(prefix="rcabot-lab-") as tmp:
        return asyncio.run(demo(args.seed, args.family, Path(tmp)))


if __name__ == "__main__":
    raise SystemExit(main())
