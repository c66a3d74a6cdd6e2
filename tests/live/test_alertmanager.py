"""Integration: a real Prometheus rule over backfilled series of a real incident fires a real
alert; a real Alertmanager delivers it to the bot's webhook, served by the real app; Slack is
the project's stand-in. One thread per alert group, the group's next notification in it, the
resolution said in it."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.backfill import backfilled
from lab.alerting import alertmanager as running_alertmanager
from lab.alerting import alertmanager_config
from lab.processes import free_port
from tests.bot.alertmanager_payloads import rfc3339
from tests.bot.test_slack_app import running
from tests.conftest import monitoring

TOKEN = "live-am-token-7c9e6679"
ORDERS = "C0ORDERS"
SERVICE = "ts-contacts-service"
FAMILY = "rcabot_cpuusage_m"  # CpuUsage(m), as bot.backfill names it


@pytest.fixture(scope="module")
def tools() -> None:
    monitoring(alertmanager=True)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _post(url: str, body: object | None = None) -> None:
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        r.read()


@pytest.fixture
def alertmanager(tools: None, tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A running Alertmanager; yields its URL and the port its webhook will call on this host."""
    bot_port = free_port()
    config = alertmanager_config(f"http://127.0.0.1:{bot_port}/alerts/alertmanager", TOKEN)
    with running_alertmanager(tmp_path / "am", config) as url:
        yield url, bot_port


def test_a_real_alert_opens_one_thread_adds_its_next_notification_and_is_resolved(
    alertmanager: tuple[str, int], tmp_path: Path, nezha_slice: Path
) -> None:
    from rca.sources.datasets import find_cases

    am_url, bot_port = alertmanager
    rules = f"""
groups:
  - name: rcabot
    interval: 1s
    rules:
      - alert: CpuHigh
        expr: last_over_time({FAMILY}{{service="{SERVICE}"}}[3650d]) > 100
        labels: {{team: orders, severity: critical}}
        annotations: {{summary: "CPU of {{{{ $labels.service }}}} is high"}}
"""
    (tmp_path / "rules.yml").write_text(rules)
    config = f"""
global: {{scrape_interval: 1h, evaluation_interval: 1s}}
rule_files: [{tmp_path / "rules.yml"}]
alerting:
  alertmanagers:
    - static_configs: [{{targets: ["{am_url.removeprefix("http://")}"]}}]
"""
    (routes := tmp_path / "routes.yaml").write_text(f"routes:\n  - match: {{team: orders}}\n    channel: {ORDERS}\n")
    (case,) = find_cases(nezha_slice)
    with backfilled(
        case, tmp_path / "prometheus", config=config, flags=["--web.enable-admin-api", "--rules.alert.resend-delay=1s"]
    ) as (prom_url, _):
        asyncio.run(_scenario(tmp_path, nezha_slice, bot_port, am_url, prom_url, routes))


async def _scenario(tmp: Path, data: Path, port: int, am_url: str, prom_url: str, routes: Path) -> None:
    settings = {"alert_token": TOKEN, "alert_routes": routes}
    async with running(tmp, data, settings_=settings, port=port) as (bot, slack, _):

        def threads() -> list[Any]:
            return [
                c
                for c in slack.of("chat.postMessage")
                if c.params["channel"] == ORDERS
                and not c.params.get("thread_ts")
                and str(c.params.get("text", "")).startswith("🚨")
            ]

        def said(ts: str, text: str) -> bool:
            return any(
                text in str(c.params.get("text"))
                for c in slack.of("chat.postMessage")
                if c.params.get("thread_ts") == ts
            )

        # the rule fires; Alertmanager delivers the group; one thread opens and its verdict arrives
        await slack.wait_for(lambda c: bool(threads()), timeout=60)
        parent = threads()[0]
        assert f"CPU of {SERVICE} is high" in parent.params["text"]
        verdict = await slack.wait_for(
            lambda c: (
                c.method == "chat.postMessage"
                and c.params["channel"] == ORDERS
                and any(head in str(c.params.get("text")) for head in ("Likely cause", "Unsure: "))
            ),
            timeout=120,
        )
        ts = verdict.params["thread_ts"]
        (row,) = bot.store.between(0, time.time() + 1)
        assert row.service == SERVICE and row.user == "alertmanager"
        # a second alert joins the group (another pod): Alertmanager's next notification lands in the thread
        extra = {
            "labels": {
                "alertname": "CpuHigh",
                "service": SERVICE,
                "team": "orders",
                "severity": "critical",
                "pod": "ts-contacts-service-extra",
            },
            "annotations": {"summary": f"CPU of {SERVICE} is high"},
            "startsAt": rfc3339(time.time() - 30),
        }
        await asyncio.to_thread(_post, f"{am_url}/api/v2/alerts", [extra])
        await slack.wait_for(lambda c: said(ts, "Alertmanager again"), timeout=60)
        # the series goes away and the extra alert ends: the group resolves, said in the same thread
        await asyncio.to_thread(_post, f"{prom_url}/api/v1/admin/tsdb/delete_series?match[]={FAMILY}")
        await asyncio.to_thread(_post, f"{am_url}/api/v2/alerts", [{**extra, "endsAt": rfc3339(time.time())}])
        await slack.wait_for(lambda c: said(ts, "Resolved"), timeout=90)
        assert len(threads()) == 1
        (group,) = bot.alerts.store.groups(channel=ORDERS)
        assert group.status == "resolved" and group.resolved is not None and group.notifications >= 2
        await bot.alerts.drain()
