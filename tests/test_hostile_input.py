"""Property-based tests: hostile and odd input gets a clear message or a 4xx, never an unhandled
exception, never a started investigation, never a changed query."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.app import Bot, build_bot, start_http
from bot.config import Settings
from handlers.ids import CORRECT, FEEDBACK_VIEW, REPAIR, VERIFY, WRONG
from handlers.requests import parse_rca_command
from rca.errors import InputError
from rca.sources.loki import LokiLogs
from rca.sources.normalise import normalise
from rca.sources.prometheus import matcher, services_regex
from rca.sources.snapshot import _SAFE
from rca.telemetry import Window
from rca.timestamps import parse_timestamp
from rca.windows import parse_window
from tests.bot.slack_standin import TEAM, SlackStandIn, free_port, sign

SECRET = "hostile-input-signing-secret"
odd_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=400) | st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "../../etc/passwd 5m",
        'x"} or vector(1) 5m',
        '{job=~".+"}',
        "ts-order-service 99999999h",
        "Frontend 1h 2h 3h",
        "<!channel> 10m",
        "`Frontend` 14:99-25:00",
        "ａｂｃ 5m",
        "Frontend\n10m",
        "%s%s%s",
        "a" * 5000,
    ]
)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)


@given(odd_text)
@settings(max_examples=300, deadline=None)
def test_rca_parser_gives_a_request_or_a_clear_error(text: str) -> None:
    try:
        command = parse_rca_command(text)
    except InputError as exc:
        assert str(exc)
        return
    assert "/" not in command.service[:1] and len(command.service) <= 200


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_windows_and_timestamps_fail_only_with_a_clear_error(text: str) -> None:
    for parse in (lambda t: parse_window(t, now=1.7e9), parse_timestamp):
        try:
            parse(text)
        except InputError as exc:
            assert str(exc)


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=200), max_size=20))
@settings(max_examples=200, deadline=None)
def test_log_normalisation_never_raises(lines: list[str]) -> None:
    out = normalise(lines, service="svc", times=[1.7e9] * len(lines))
    assert all(r.time == r.time for r in out.records)  # every record dated


_ONE_MATCHER = re.compile(r'^[a-z_]+(=|=~|!=)"((?:[^"\\]|\\.)*)"$')


@given(st.lists(st.text(max_size=40), min_size=0, max_size=4))
@settings(max_examples=300, deadline=None)
def test_service_names_cannot_change_promql_or_logql(names: list[str]) -> None:
    m = _ONE_MATCHER.match(matcher("service", names))
    assert m is not None  # exactly one label matcher, its value one closed string
    selector = LokiLogs("http://loki").selector(names)
    assert selector.startswith("{") and selector.endswith("}") and _ONE_MATCHER.match(selector[1:-1])
    if len(names) > 1:  # inside =~ every name is a literal: the regex matches exactly the names
        value = _unquote(services_regex(names))
        for n in names:
            if n.isprintable() and "\\" not in n:
                assert re.fullmatch(value, n)


def _unquote(text: str) -> str:
    """The value of a PromQL/LogQL double-quoted string body."""
    out, chars = [], iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars)
            out.append({"n": "\n", "r": "\r"}.get(nxt, nxt))
        else:
            out.append(ch)
    return "".join(out)


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_names_cannot_become_paths(name: str) -> None:
    safe = _SAFE.sub("_", name)
    assert "/" not in safe and "\x00" not in safe and (Path("/snap") / f"{safe}_metric.csv").parent == Path("/snap")


# -- the real app, signed payloads ------------------------------------------------------------
@pytest.fixture(scope="module")
def app(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Bot, SlackStandIn]]:
    from tests.conftest import NEZHA_SLICE

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def start() -> None:
        slack = SlackStandIn()
        await slack.start()
        settings_ = Settings(
            bot_token=slack.token,
            signing_secret=SECRET,
            api_url=slack.api_url,
            db=tmp_path_factory.mktemp("hostile") / "rcabot.db",
            data=NEZHA_SLICE,
            now=parse_timestamp("2023-01-29T13:36:00Z"),
            workers=1,
        )
        bot = build_bot(settings_, stream_interval=0.2)
        port = free_port()
        state.update(
            slack=slack,
            bot=bot,
            runner=await start_http(bot, host="127.0.0.1", port=port),
            url=f"http://127.0.0.1:{port}/slack/events",
        )

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(30)
    yield state["url"], state["bot"], state["slack"]
    asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop).result(10)
    asyncio.run_coroutine_threadsafe(state["slack"].stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    state["bot"].close()


def send(url: str, body: str, content_type: str) -> int:
    request = urllib.request.Request(
        url,
        data=body.encode("utf-8", "surrogatepass"),
        method="POST",
        headers={"Content-Type": content_type, **sign(SECRET, body)},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def form(fields: dict[str, Any]) -> str:
    return urllib.parse.urlencode({k: v for k, v in fields.items() if v is not None})


@given(
    text=odd_text, channel=st.one_of(st.none(), st.text(max_size=30)), user=st.one_of(st.none(), st.text(max_size=30))
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_slash_commands(app: tuple[str, Bot, SlackStandIn], text: str, channel: str | None, user: str | None) -> None:
    url, bot, _ = app
    status = send(
        url,
        form(
            {
                "command": "/rca",
                "text": text,
                "channel_id": channel,
                "user_id": user,
                "team_id": TEAM,
                "response_url": "http://127.0.0.1:9/r",
                "trigger_id": None,
            }
        ),
        "application/x-www-form-urlencoded",
    )
    assert status < 500
    assert {r.service for r in bot.store.between(0, 2e9)} <= {"Frontend"}  # nothing else can start


@given(
    action=st.sampled_from([REPAIR, VERIFY, CORRECT, WRONG, "rca_unknown"]),
    value=json_value,
    channel=json_value,
    extra=st.dictionaries(st.text(max_size=10), json_value, max_size=3),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_button_payloads(
    app: tuple[str, Bot, SlackStandIn], action: str, value: Any, channel: Any, extra: dict
) -> None:
    url, bot, _ = app
    payload = {
        "type": "block_actions",
        "user": {"id": "U1"},
        "team": {"id": TEAM},
        "channel": channel,
        "actions": [{"action_id": action, "value": value}],
        **extra,
    }
    assert send(url, form({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded") < 500


@given(
    event=st.fixed_dictionaries(
        {"type": st.sampled_from(["message", "app_mention", "reaction_added"])},
        optional={
            "text": odd_text,
            "channel": json_value,
            "user": json_value,
            "thread_ts": json_value,
            "subtype": json_value,
            "bot_id": json_value,
        },
    ),
    event_id=st.text(min_size=1, max_size=20),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_event_payloads(app: tuple[str, Bot, SlackStandIn], event: dict[str, Any], event_id: str) -> None:
    url, bot, _ = app
    body = {"type": "event_callback", "team_id": TEAM, "event": event, "event_id": event_id}
    assert send(url, json.dumps(body), "application/json") < 500


@given(values=st.dictionaries(st.sampled_from(["cause", "note", "other"]), odd_text, max_size=3), meta=json_value)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_feedback_form_payloads(app: tuple[str, Bot, SlackStandIn], values: dict[str, str], meta: Any) -> None:
    url, _, _ = app
    state = {b: {"value": {"type": "plain_text_input", "value": v}} for b, v in values.items()}
    payload = {
        "type": "view_submission",
        "user": {"id": "U1"},
        "team": {"id": TEAM},
        "view": {"type": "modal", "callback_id": FEEDBACK_VIEW, "private_metadata": meta, "state": {"values": state}},
    }
    assert send(url, form({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded") < 500


def test_no_listener_raised(app: tuple[str, Bot, SlackStandIn]) -> None:
    """Run last in this module: every payload above was handled without reaching the error handler."""
    _, bot, _ = app
    asyncio.run(asyncio.sleep(1.0))  # let background listeners finish
    assert bot.errors == []
    assert Window(0, 1).seconds == 1


def test_a_signed_payload_bolt_could_not_route_gets_400(app: tuple[str, Bot, SlackStandIn]) -> None:
    url, _, _ = app
    for payload in (
        {"type": "view_submission", "user": {"id": "U1"}, "view": {"callback_id": FEEDBACK_VIEW}},
        {"type": "block_actions", "channel": False, "actions": [{"action_id": REPAIR}]},
        {"type": "block_actions", "actions": "not a list"},
    ):
        assert send(url, form({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded") == 400
    assert send(url, "payload=%7Bnot+json", "application/x-www-form-urlencoded") == 400
