"""The change feed on the real app: `POST /changes` authenticated, capped and parsed like the
alert webhook, each change recorded, and `/rca changes` listing them through the Slack stand-in."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import aiohttp

from handlers.changes import MAX_BODY
from handlers.ids import REPAIR
from tests.bot.slack_standin import SlackStandIn, command_body, event_body
from tests.bot.test_slack_app import CHANNEL, blocks_text, post, run, running

TOKEN = "change-token-9f86d081884c7d65"


async def send(url: str, body: bytes, *, token: str = TOKEN) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            url.replace("/slack/events", "/changes"),
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        ) as r,
    ):
        return r.status, await r.text()


async def reply(slack: SlackStandIn, count: int) -> str:
    for _ in range(100):
        if len(slack.responses) >= count:
            return str(slack.responses[count - 1]["text"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"{len(slack.responses)} response(s), wanted {count}")


def test_posted_changes_are_recorded_and_listed_by_window_and_service(tmp_path: Path, nezha_slice: Path) -> None:
    marker = {
        "service": "ts-order-service",
        "kind": "deploy",
        "before": "1.4.2",
        "after": "1.4.3",
        "who": "ci",
        "link": "https://ci.example.com/runs/7",
        "time": "2023-01-29T13:20:00Z",
    }

    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_={"alert_token": TOKEN}) as (bot, slack, url):
            assert (await send(url, json.dumps(marker).encode()))[0] == 200
            flag = {**marker, "service": "ts-user-service", "kind": "flag", "who": "<!channel>"}
            assert (await send(url, json.dumps(flag).encode()))[0] == 200
            old = {**marker, "time": "2023-01-29T10:00:00Z", "after": "1.4.2", "before": "1.4.1"}
            assert (await send(url, json.dumps(old).encode()))[0] == 200
            # refused: no token, a wrong one, a body past the cap, a payload that names no service
            assert (await send(url, json.dumps(marker).encode(), token=""))[0] == 401
            assert (await send(url, json.dumps(marker).encode(), token="nope"))[0] == 401
            assert (await send(url, b" " * (MAX_BODY + 1)))[0] == 413
            status, body = await send(url, json.dumps({"kind": "deploy"}).encode())
            assert status == 400 and "service" in body
            await bot.changes.drain()

            await post(url, command_body("changes ts-order-service 1h", response_url=slack.response_url("c1")))
            listed = await reply(slack, 1)
            assert "1.4.2 → 1.4.3 (deploy by ci)" in listed and "<https://ci.example.com/runs/7|link>" in listed
            assert "1.4.1" not in listed and "ts-user-service" not in listed  # before the window; another service
            await post(url, command_body("changes 1h", response_url=slack.response_url("c2"), trigger_id="t-c2"))
            everything = await reply(slack, 2)
            assert "ts-order-service" in everything and "ts-user-service" in everything
            assert "<!channel>" not in everything and "&lt;!channel&gt;" in everything  # shown, never a broadcast
            await post(
                url,
                command_body("changes ts-order-service 5m", response_url=slack.response_url("c3"), trigger_id="t-c3"),
            )
            assert "No change to `ts-order-service` was recorded" in await reply(slack, 3)
            await post(
                url,
                command_body("changes ts-order-service 99q", response_url=slack.response_url("c4"), trigger_id="t-c4"),
            )
            assert "Usage" in await reply(slack, 4)

    run(scenario)


def test_the_verdict_says_what_changed_to_its_suspects_and_the_thread_answers_what_changed(
    tmp_path: Path, nezha_slice: Path
) -> None:
    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_={"alert_token": TOKEN}) as (bot, slack, url):
            services = sorted(await bot.desk.telemetry.services())
            for s in services:  # every service changed: whichever leads, its change is the one shown
                marker = {"service": s, "after": f"v-{s}", "who": "ci", "time": "2023-01-29T13:30:00Z"}
                assert (await send(url, json.dumps(marker).encode()))[0] == 200
            await bot.changes.drain()
            await post(url, command_body("Frontend 10m", response_url=slack.response_url()))
            verdict = await slack.wait_for(
                lambda c: c.method == "chat.postMessage" and REPAIR in blocks_text(c), timeout=120
            )
            thread, shown = verdict.params["thread_ts"], blocks_text(verdict)
            row = bot.store.by_thread(CHANNEL, thread)
            assert row is not None and row.top_service
            assert "What changed" in shown and f"v-{row.top_service}" in shown
            assert "other service(s) changed then" in shown  # about 40 changed: the suspects' are listed
            # the engine was given them too: its trace carries every change around the window
            assert row.trace is not None
            carried = {c["service"] for c in row.trace["evidence_package"]["changes"]}
            assert carried == set(services)
            await post(
                url,
                event_body(
                    {
                        "type": "message",
                        "channel": CHANNEL,
                        "user": "U0ONCALL",
                        "text": "what changed?",
                        "ts": "1700009999.000200",
                        "thread_ts": thread,
                    },
                    event_id="Ev0CHANGED",
                ),
            )
            answer = await slack.wait_for(
                lambda c: (
                    c.method == "chat.postMessage"
                    and c.params.get("thread_ts") == thread
                    and "Changes to" in blocks_text(c)
                )
            )
            assert all(f"v-{s}" in blocks_text(answer) for s in services[-5:])
            assert bot.store.questions(row.id)[-1][0] == "what changed?"

    run(scenario)


def test_each_incident_carries_the_changes_around_its_window_and_says_what_it_could_not_read(
    tmp_path: Path, nezha_slice: Path
) -> None:
    from bot.changes import ChangedTelemetry, Changes
    from bot.telemetry import ReplayTelemetry
    from rca.changes import Change, ChangeKind
    from rca.sources.prometheus_changes import PrometheusChanges
    from storage.changes import ChangeStore

    async def scenario() -> None:
        base = ReplayTelemetry(nezha_slice)
        window = await base.window("10m")
        store = ChangeStore(tmp_path / "changes.db")
        near = Change("ts-order-service", ChangeKind.DEPLOY, window.start - 120, before="1", after="2")
        store.add(near)
        store.add(Change("ts-order-service", ChangeKind.DEPLOY, window.start - 7200, after="0"))  # long before
        unreachable = PrometheusChanges("http://127.0.0.1:9", timeout=2)
        telemetry = ChangedTelemetry(base, Changes(store, base, [unreachable]))
        incident = await telemetry.incident("Frontend", window)
        assert [(c.service, c.after) for c in incident.changes] == [("ts-order-service", "2")]
        assert any("changes Prometheus records" in n and "not read" in n for n in incident.notes)
        assert incident.window == window and (await telemetry.services()) == (await base.services())
        store.close()

    asyncio.run(scenario())


def test_a_replayed_recording_s_own_changes_stop_at_the_window_s_close(tmp_path: Path, nezha_slice: Path) -> None:
    """Replayed, a recording knows its whole day; the question asked at the window's close
    knows only the changes made by then."""
    from bot.changes import ChangedTelemetry, Changes
    from bot.telemetry import ReplayTelemetry
    from rca.changes import Change, ChangeKind, write_changes
    from storage.changes import ChangeStore

    data = tmp_path / "data"
    shutil.copytree(nezha_slice, data)

    async def scenario() -> None:
        window = await ReplayTelemetry(data).window("10m")
        day = next(p for p in (data / "rca_data").iterdir() if p.is_dir())
        made = [window.start - 300, window.end - 60, window.end + 30, window.end + 900]
        write_changes(
            [Change("ts-order-service", ChangeKind.DEPLOY, t, after=str(i)) for i, t in enumerate(made)],
            day / "changes.jsonl",
        )
        base = ReplayTelemetry(data)
        store = ChangeStore(tmp_path / "changes.db")
        incident = await ChangedTelemetry(base, Changes(store, base)).incident("Frontend", window)
        assert [c.after for c in incident.changes] == ["0", "1"]
        store.close()

    asyncio.run(scenario())
