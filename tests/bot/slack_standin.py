"""A local stand-in for Slack: its Web API (the methods rcabot calls, answering in Slack's JSON
with real-looking `ts` values), file uploads, response URLs, and a signer for requests to the
app. Every call is recorded so tests can assert what reached "Slack".
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

TEAM, BOT_USER, BOT_ID = "T0STANDIN", "U0RCABOT", "B0RCABOT"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)


@dataclass
class SlackStandIn:
    streaming: bool = True  # False: chat.*Stream answer unknown_method, as where unavailable
    rate_limit_once: set[str] = field(default_factory=set)  # methods whose first call gets a 429
    server_error_once: set[str] = field(default_factory=set)  # methods whose first call gets a 503
    usergroups: dict[str, list[str]] = field(default_factory=dict)  # user-group id -> member ids
    token: str = "xoxb-standin"
    calls: list[Call] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)  # what reached response_url
    uploads: dict[str, bytes] = field(default_factory=dict)
    app_token: str = "xapp-1-standin"
    socket_inbox: list[dict[str, Any]] = field(default_factory=list)  # what the app sent over Socket Mode
    streams: dict[str, dict[str, Any]] = field(default_factory=dict)  # ts -> channel, thread, open
    delay: float = 0.0  # seconds every Web API answer takes: a call made before an ack delays the ack
    zones: dict[str, str] = field(default_factory=dict)  # user id -> tz users.info gives (UTC otherwise)

    def __post_init__(self) -> None:
        self._ts = itertools.count(1)
        self._files = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.changed = asyncio.Event()
        self.socket_outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()  # envelopes for the app

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"{self.base}/response/{name}"

    async def start(self) -> None:
        app = web.Application(client_max_size=20 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)  # the SDK reads some methods with GET
        app.router.add_post("/upload/{file}", self._upload)
        app.router.add_post("/response/{name}", self._response)
        app.router.add_get("/link", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- what tests read ---------------------------------------------------------------------
    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and c.status == 200]

    async def wait_for(self, predicate: Any, *, timeout: float = 60.0) -> Call:
        """The first recorded call satisfying predicate, waiting for it to arrive."""
        deadline = time.monotonic() + timeout
        while True:
            found = next((c for c in self.calls if c.status == 200 and predicate(c)), None)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                seen = [(c.method, str(c.params.get("text", ""))[:60]) for c in self.calls]
                raise AssertionError(f"no matching call within {timeout}s; calls: {seen}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=0.5)

    # -- the Web API -------------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        call = Call(method, params, time.monotonic())
        self.calls.append(call)
        self.changed.set()
        token = self.app_token if method == "apps.connections.open" else self.token
        if request.headers.get("Authorization") != f"Bearer {token}":
            return web.json_response({"ok": False, "error": "not_authed"})
        if method in self.server_error_once:
            self.server_error_once.discard(method)
            call.status = 503
            return web.Response(status=503, text="upstream connect error")
        if method in self.rate_limit_once:
            self.rate_limit_once.discard(method)
            call.status = 429
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "1"})
        if self.delay and method != "auth.test":
            await asyncio.sleep(self.delay)
        call.response = self._answer(method, params)
        return web.json_response(call.response)

    def _answer(self, method: str, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel", ""))
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"}
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://standin.slack.com/",
                "team": "Stand-in",
                "user": "rcabot",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            ts = self._next_ts()
            message = {"type": "message", "text": p.get("text", ""), "user": BOT_USER, "bot_id": BOT_ID, "ts": ts}
            if p.get("thread_ts"):
                message["thread_ts"] = p["thread_ts"]
            return {"ok": True, "channel": channel, "ts": ts, "message": message}
        if method == "chat.update":
            return {
                "ok": True,
                "channel": channel,
                "ts": p.get("ts"),
                "text": p.get("text", ""),
                "message": {"type": "message", "text": p.get("text", ""), "user": BOT_USER},
            }
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            if not self.streaming:
                return {"ok": False, "error": "unknown_method"}
            return self._stream_call(method, channel, p)
        if method == "chat.getPermalink":
            return {
                "ok": True,
                "channel": channel,
                "permalink": f"https://standin.slack.com/archives/{channel}/p{str(p.get('message_ts')).replace('.', '')}",
            }
        if method == "users.info":
            user = str(p.get("user", ""))
            return {"ok": True, "user": {"id": user, "tz": self.zones.get(user, "UTC"), "tz_label": "", "tz_offset": 0}}
        if method == "usergroups.users.list":
            group = str(p.get("usergroup", ""))
            if group not in self.usergroups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": self.usergroups[group]}
        if method == "views.open":
            view = p.get("view", {})
            return {"ok": True, "view": {"id": "V0STANDIN", **(json.loads(view) if isinstance(view, str) else view)}}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._files):06d}"
            return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = json.loads(p["files"]) if isinstance(p.get("files"), str) else p.get("files", [])
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title", "")} for f in files]}
        return {"ok": False, "error": "unknown_method"}

    def _stream_call(self, method: str, channel: str, p: dict[str, Any]) -> dict[str, Any]:
        """Slack's rules for streams: a start names its thread, and outside a DM the user and
        team it streams to; appends and the stop go to a stream that is still open."""
        if method == "chat.startStream":
            missing = [a for a in ("channel", "thread_ts") if not p.get(a)]
            if not channel.startswith("D"):  # channels need to know whom the stream is for
                missing += [a for a in ("recipient_team_id", "recipient_user_id") if not p.get(a)]
            if missing:
                return {
                    "ok": False,
                    "error": "invalid_arguments",
                    "response_metadata": {"messages": [f"[ERROR] missing required field: {a}" for a in missing]},
                }
            ts = self._next_ts()
            self.streams[ts] = {"channel": channel, "thread_ts": str(p["thread_ts"]), "open": True}
            return {"ok": True, "channel": channel, "ts": ts}
        stream = self.streams.get(str(p.get("ts", "")))
        if stream is None or stream["channel"] != channel or not stream["open"]:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        if method == "chat.stopStream":
            stream["open"] = False
        return {"ok": True, "channel": channel, "ts": p.get("ts")}

    def open_streams(self) -> list[str]:
        """Streams started and never stopped: Slack would show them as still typing."""
        return [ts for ts, s in self.streams.items() if s["open"]]

    def _next_ts(self) -> str:
        return f"{1700000000 + next(self._ts)}.{next(self._ts):06d}"

    async def _upload(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.uploads[request.match_info["file"]] = body
        return web.Response(text=f"OK - {len(body)}")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode: hello, then the queued envelopes; every message from the app recorded."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {"host": "standin"},
                "connection_info": {"app_id": "A0RCABOT"},
            }
        )

        async def pump() -> None:
            while True:
                await ws.send_json(await self.socket_outbox.get())

        sender = asyncio.create_task(pump())
        try:
            async for message in ws:
                if message.type == aiohttp.WSMsgType.TEXT:
                    self.socket_inbox.append(json.loads(message.data))
                    self.changed.set()
        finally:
            sender.cancel()
        return ws

    async def _response(self, request: web.Request) -> web.Response:
        self.responses.append(await request.json())
        self.changed.set()
        return web.Response(text="ok")


async def _params(request: web.Request) -> dict[str, Any]:
    if request.method == "GET":
        return dict(request.query)
    if request.content_type == "application/json":
        body = await request.json()
        return dict(body) if isinstance(body, dict) else {}
    form = await request.post()
    out: dict[str, Any] = dict(request.query)  # the SDK sends some methods' arguments as query parameters
    for k, v in form.items():
        out[k] = v if isinstance(v, str) else "<file>"
    for k in ("blocks", "view", "files"):
        if isinstance(out.get(k), str):
            with contextlib.suppress(json.JSONDecodeError):
                out[k] = json.loads(out[k])
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- requests from "Slack" to the app -------------------------------------------------------------
def sign(secret: str, body: str, *, timestamp: int | None = None) -> dict[str, str]:
    """The headers Slack sends with a request: its timestamp and v0 HMAC-SHA256 signature."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def command_body(
    text: str,
    *,
    response_url: str,
    channel: str = "C0INCIDENT",
    user: str = "U0ONCALL",
    trigger_id: str = "13345224609.738474920.8088930838d88f008e0",
) -> tuple[str, str]:
    form = {
        "token": "legacy",
        "team_id": TEAM,
        "team_domain": "standin",
        "channel_id": channel,
        "channel_name": "incidents",
        "user_id": user,
        "user_name": "oncall",
        "command": "/rca",
        "text": text,
        "api_app_id": "A0RCABOT",
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }
    return urllib.parse.urlencode(form), "application/x-www-form-urlencoded"


def action_body(
    action_id: str,
    value: str,
    *,
    channel: str,
    message_ts: str,
    response_url: str,
    trigger_id: str,
    user: str = "U0ONCALL",
) -> tuple[str, str]:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": "oncall", "team_id": TEAM},
        "api_app_id": "A0RCABOT",
        "token": "legacy",
        "trigger_id": trigger_id,
        "team": {"id": TEAM, "domain": "standin"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel, "name": "incidents"},
        "message": {"type": "message", "ts": message_ts, "thread_ts": message_ts, "text": "verdict"},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": f"verdict:{value}",
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"


def view_body(
    callback_id: str, private_metadata: str, values: dict[str, str], *, trigger_id: str, user: str = "U0ONCALL"
) -> tuple[str, str]:
    state = {block: {"value": {"type": "plain_text_input", "value": v}} for block, v in values.items()}
    payload = {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "standin"},
        "user": {"id": user, "username": "oncall", "team_id": TEAM},
        "api_app_id": "A0RCABOT",
        "token": "legacy",
        "trigger_id": trigger_id,
        "view": {
            "id": "V0STANDIN",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": private_metadata,
            "state": {"values": state},
            "hash": "1",
            "team_id": TEAM,
        },
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"


def event_body(event: dict[str, Any], *, event_id: str) -> tuple[str, str]:
    body = {
        "token": "legacy",
        "team_id": TEAM,
        "api_app_id": "A0RCABOT",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }
    return json.dumps(body), "application/json"


# -- `rcabot serve` as its own process, pointed at a stand-in --------------------------------------
def serve_process(
    slack: SlackStandIn, *, secret: str, port: int, db: Path, workers: int = 2, extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `rcabot serve` (HTTP mode, the embedded incident replayed) talking to the stand-in."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SLACK_APP_TOKEN", "ANTHROPIC_API_KEY", "RCABOT_DATA", "PROMETHEUS_URL", "LOKI_URL", "JAEGER_URL")
    }
    env = {
        **inherited,
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": secret,
        "SLACK_API_URL": slack.api_url,
        "PORT": str(port),
        "RCABOT_DB": str(db),
        "RCABOT_NOW": "2023-01-29T13:36:00Z",
        "RCABOT_WORKERS": str(workers),
        **(extra or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_until_up(port: int, *, timeout: float = 60.0) -> None:
    """Until the app's /healthz answers."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(f"http://127.0.0.1:{port}/healthz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"rcabot serve did not come up within {timeout:.0f} s")
