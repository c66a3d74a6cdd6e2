"""Alertmanager's webhook on the real app: authenticated, answered at once, one thread per alert
group, repeats appended, resolution recorded, storms folded, hostile payloads refused."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.alerts import load_routes
from rca.errors import InputError
from tests.bot.alertmanager_payloads import alert, notification, rfc3339
from tests.bot.test_slack_app import CHANNEL, blocks_text, run, running

TOKEN = "am-token-5d41402abc4b2a76"
ORDERS = "C0ORDERS"
ROUTES = f"""
routes:
  - match: {{team: orders}}
    match_re: {{severity: "critical|page"}}
    channel: {ORDERS}
    service_label: app
default:
  channel: {CHANNEL}
"""


def settings(tmp: Path, routes: str = ROUTES, **more: Any) -> dict[str, Any]:
    (tmp / "routes.yaml").write_text(routes)
    return {"alert_token": TOKEN, "alert_routes": tmp / "routes.yaml", **more}


async def deliver(url: str, body: bytes, *, token: str = TOKEN) -> tuple[int, float]:
    started = time.monotonic()
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            url.replace("/slack/events", "/alerts/alertmanager"),
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        ) as r,
    ):
        await r.read()
        return r.status, time.monotonic() - started


def parents(slack: Any, channel: str) -> list[Any]:
    return [
        c
        for c in slack.of("chat.postMessage")
        if c.params["channel"] == channel
        and not c.params.get("thread_ts")
        and str(c.params.get("text", "")).startswith("🚨")
    ]


def in_thread(slack: Any, ts: str) -> str:
    return " ".join(json.dumps(c.params) for c in slack.of("chat.postMessage") if c.params.get("thread_ts") == ts)


def test_an_alert_group_opens_one_thread_gets_its_repeats_and_its_resolution(tmp_path: Path, nezha_slice: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_=settings(tmp_path)) as (bot, slack, url):
            began = time.time() - 300
            first = alert(
                {
                    "alertname": "HighCPU",
                    "team": "orders",
                    "severity": "critical",
                    "app": "ts-contacts-service",
                    "pod": "a",
                },
                starts=began,
                summary="CPU is high",
            )
            group = {"alertname": "HighCPU", "app": "ts-contacts-service"}
            status, _ = await deliver(url, notification(group, [first]))
            assert status == 200
            await slack.wait_for(lambda c: bool(parents(slack, ORDERS)))
            parent = parents(slack, ORDERS)[0]
            verdict = await slack.wait_for(
                lambda c: (
                    c.method == "chat.postMessage"
                    and c.params["channel"] == ORDERS
                    and "Re-check reasoning" in blocks_text(c)
                ),
                timeout=120,
            )
            ts = verdict.params["thread_ts"]
            assert "CPU is high" in parent.params["text"]
            await asyncio.sleep(3.0)  # the alert message stays: the verdict is a reply, never written over it
            assert not [c for c in slack.of("chat.update") if c.params.get("ts") == parent.response.get("ts")]
            (row,) = bot.store.between(0, time.time() + 1)
            assert row.user == "alertmanager" and row.service == "ts-contacts-service" and row.channel == ORDERS
            assert bot.alerts.store.group(json.loads(notification(group, [first]))["groupKey"]).investigation == row.id  # type: ignore[union-attr]
            # the same notification again: nothing new; a second alert joins the group: one line in the thread
            await deliver(url, notification(group, [first]))
            second = alert({**first["labels"], "pod": "b"}, starts=began + 60, summary="CPU is high")
            await deliver(url, notification(group, [first, second]))
            await slack.wait_for(lambda c: "1 new" in in_thread(slack, ts))
            assert (
                len(parents(slack, ORDERS)) == 1
                and sum("Alertmanager again" in str(c.params.get("text")) for c in slack.of("chat.postMessage")) == 1
            )
            # resolved: said in the thread, the time to resolve recorded
            ended = time.time()
            await deliver(
                url,
                notification(
                    group,
                    [{**a, "status": "resolved", "endsAt": rfc3339(ended)} for a in (first, second)],
                    status="resolved",
                ),
            )
            await slack.wait_for(lambda c: "Resolved" in in_thread(slack, ts))
            stored = bot.alerts.store.groups(channel=ORDERS)[0]
            assert stored.status == "resolved" and stored.resolved is not None and stored.notifications == 3
            assert abs((stored.resolved - stored.fired) - (ended - began)) < 2
            # the alert links to its graph and to a silence of its group, with its severity
            head = json.dumps(parent.params["blocks"])
            assert "[critical]" in parent.params["text"] and "http://prometheus:9090/graph|graph" in head
            assert "http://alertmanager:9093/#/silences/new?filter=" in head
            # it fires again after it resolved: a new investigation, in the same thread
            again = alert(first["labels"], starts=time.time() - 60, summary="CPU is high")
            await deliver(url, notification(group, [again]))
            await slack.wait_for(
                lambda c: (
                    c.method == "chat.postMessage"
                    and c.params.get("thread_ts") == ts
                    and "Alert again" in str(c.params.get("text"))
                )
            )
            await slack.wait_for(
                lambda c: (
                    len(bot.store.between(0, time.time() + 1)) == 2
                    and all(r.status == "done" for r in bot.store.between(0, time.time() + 1))
                ),
                timeout=120,
            )
            assert len(parents(slack, ORDERS)) == 1  # no second thread
            assert bot.alerts.store.groups(channel=ORDERS)[0].status == "firing"
            # marked right: the channel's summary counts it among those alerts started
            bot.store.add_feedback(row.id, user="U0ONCALL", correct=True)
            await bot.front.post_summary(ORDERS)
            summary = await slack.wait_for(lambda c: "Daily RCA summary" in str(c.params.get("text")))
            assert "started by alerts: 2, lead cause marked right in 1 of 1" in json.dumps(summary.params["blocks"])

    run(scenario)


def test_hostile_deliveries_start_nothing_and_labels_are_never_markup(tmp_path: Path, nezha_slice: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_=settings(tmp_path)) as (bot, slack, url):
            good = notification(
                {"alertname": "X"}, [alert({"alertname": "X", "service": "Frontend"}, starts=time.time())]
            )
            assert (await deliver(url, good, token="wrong"))[0] == 401
            assert (await deliver(url, good, token=""))[0] == 401
            assert (await deliver(url, b"{not json"))[0] == 400
            assert (await deliver(url, b'{"version": "3", "alerts": []}'))[0] == 400
            assert (
                await deliver(
                    url, b'{"version": "4", "status": "firing", "groupKey": "k", "alerts": [{"labels": {"a": 1}}]}'
                )
            )[0] == 400
            assert (await deliver(url, b" " * (1024 * 1024 + 10)))[0] == 413
            await asyncio.sleep(0.5)
            assert not slack.of("chat.postMessage") and not bot.alerts.store.groups()
            # label values that would be Slack markup: shown as text, a broadcast never reaches Slack
            evil = alert(
                {"alertname": "<!channel> *bold* <https://evil.example|click>", "service": "<!here>"},
                starts=time.time(),
                summary="<!channel> wake up <@U0BOSS>",
            )
            assert (await deliver(url, notification({"alertname": "evil"}, [evil])))[0] == 200
            await slack.wait_for(lambda c: bool(parents(slack, CHANNEL)))
            await asyncio.sleep(0.5)
            sent = json.dumps([c.params for c in slack.calls])
            assert "<!channel>" not in sent and "<!here>" not in sent and "<@U0BOSS>" not in sent
            assert "&lt;!channel&gt;" in sent and "Not investigated" in sent  # "<!here>" names no service
            assert not bot.store.between(0, time.time() + 1)

    run(scenario)


def test_an_alert_no_route_takes_is_recorded_and_said_in_status(tmp_path: Path, nezha_slice: Path) -> None:
    routes = f"routes:\n  - match: {{team: orders}}\n    channel: {ORDERS}\n"  # no default

    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_=settings(tmp_path, routes)) as (bot, slack, url):
            lost = notification(
                {"alertname": "Disk"},
                [alert({"alertname": "Disk", "team": "storage", "service": "Frontend"}, starts=time.time())],
            )
            assert (await deliver(url, lost))[0] == 200
            for _ in range(50):
                if bot.alerts.store.unrouted_since(0):
                    break
                await asyncio.sleep(0.1)
            assert bot.alerts.store.unrouted_since(0) == 1 and not slack.of("chat.postMessage")
            assert "matched no route" in await bot.front.status_text(CHANNEL)

    run(scenario)


def test_a_storm_of_500_notifications_in_10_groups_opens_10_threads_and_loses_nothing(
    tmp_path: Path, nezha_slice: Path
) -> None:
    """How fast each is answered under the storm is measured by `python -m bench.alert_storm`."""
    services = [
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

    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_=settings(tmp_path)) as (bot, slack, url):
            now = time.time()
            bodies = []
            for i in range(50):  # each group's notification grows by one alert, as Alertmanager's would
                for svc in services:
                    alerts = [
                        alert({"alertname": "Errors", "service": svc, "pod": f"p{j}"}, starts=now - 60)
                        for j in range(i + 1)
                    ]
                    bodies.append(notification({"alertname": "Errors", "service": svc}, alerts))

            async def later(i: int, body: bytes) -> tuple[int, float]:  # 50 a second: 500 in ten seconds
                await asyncio.sleep(i * 0.02)
                return await deliver(url, body)

            answers = await asyncio.gather(*(later(i, b) for i, b in enumerate(bodies)))
            assert [s for s, _ in answers] == [200] * 500
            await bot.alerts.drain()
            groups = bot.alerts.store.groups(channel=CHANNEL)
            assert len(groups) == 10 and sum(g.notifications for g in groups) == 500  # nothing lost
            assert len(parents(slack, CHANNEL)) == 10 and {g.service for g in groups} == set(services)

    run(scenario)


def test_a_new_groups_first_notification_superseded_before_it_was_handled_is_still_counted(
    tmp_path: Path, nezha_slice: Path
) -> None:
    from handlers.alerts import parse_notification

    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_=settings(tmp_path)) as (bot, _slack, _url):
            now = time.time()
            first, second = (
                parse_notification(
                    notification(
                        {"alertname": "Errors", "service": "ts-order-service"},
                        [
                            alert(
                                {"alertname": "Errors", "service": "ts-order-service", "pod": f"p{j}"}, starts=now - 60
                            )
                            for j in range(k)
                        ],
                    )
                )
                for k in (1, 2)
            )
            bot.alerts.take(first)
            bot.alerts.take(second)  # queued before the group's task handled (and claimed) the first
            await bot.alerts.drain()
            (group,) = bot.alerts.store.groups(channel=CHANNEL)
            assert group.notifications == 2

    run(scenario)


def test_threads_beyond_the_channels_minute_fold_into_one_line(tmp_path: Path, nezha_slice: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_=settings(tmp_path, alert_threads_per_minute=2)) as (
            bot,
            slack,
            url,
        ):
            for svc in ("ts-contacts-service", "ts-order-service", "ts-route-service", "ts-user-service"):
                await deliver(
                    url, notification({"service": svc}, [alert({"alertname": "E", "service": svc}, starts=time.time())])
                )
            await bot.alerts.drain()
            assert len(parents(slack, CHANNEL)) == 2
            folded = [c for c in slack.calls if "more alert group(s)" in str(c.params.get("text"))]
            assert folded[-1].method == "chat.update" and "2 more alert group(s)" in folded[-1].params["text"]
            grouped = sorted(g.service for g in bot.alerts.store.groups() if g.status == "grouped")
            assert all(f"E ({svc})" in folded[-1].params["text"] for svc in grouped)  # each folded group named
            assert sorted(g.status for g in bot.alerts.store.groups()) == ["firing", "firing", "grouped", "grouped"]

    run(scenario)


@pytest.mark.parametrize(
    "text",
    [
        "- a list",
        "routes: {a: b}",
        "routes:\n  - channel: general",
        "routes:\n  - channel: C0X\n    match: {team: [1]}",
        "routes:\n  - channel: C0X\n    match_re: {team: '('}",
        "default: {channel: C0X, match: {a: b}}",
        "routes: []\nextra: 1",
    ],
)
def test_a_bad_routes_file_is_refused_by_name(tmp_path: Path, text: str) -> None:
    (tmp_path / "r.yaml").write_text(text)
    with pytest.raises(InputError, match="RCABOT_ALERT_ROUTES"):
        load_routes(tmp_path / "r.yaml")


def test_alert_links_are_http_only_and_never_markup() -> None:
    from handlers.alerts import parse_notification
    from handlers.fields import web_link

    assert web_link("https://grafana.example.com/d/x?a=1") == "https://grafana.example.com/d/x?a=1"
    for bad in ("javascript:alert(1)", "http://x|<!channel>", "ftp://x", "http:///nohost", "http://a b"):
        assert web_link(bad) == ""
    a = alert({"alertname": "E", "severity": "page"}, starts=time.time())
    a["generatorURL"] = "javascript:alert(1)"
    a["annotations"] = {"runbook_url": "https://wiki.example.com/e|x"}
    n = parse_notification(notification({"alertname": "E"}, [a]))
    assert n.graph_url == "" and n.runbook_url == "" and n.severity == "page"
    assert n.silence_url.startswith("http://alertmanager:9093/#/silences/new?filter=%7Balertname%3D%22E%22%7D")
