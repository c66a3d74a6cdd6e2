"""A local stand-in for Anthropic's Messages API (POST /v1/messages), speaking its real JSON:
tool_use content blocks, usage with cache fields, and its error bodies and status codes
(429 rate_limit_error with retry-after, 529 overloaded_error). A scripted "model" answers
from the request's own data, so whole investigations can run against it.

Token counts are estimated from the request (about four characters a token); a request whose
system prompt and tools carry cache_control and repeat an earlier prefix of at least 1,024
tokens reads that prefix from the cache, as the real API does.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Brain = Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]]  # (tool, data, request) -> input
_DATA = re.compile(r"<telemetry_data>\n(.*)\n</telemetry_data>", re.S)


def telemetry_data(request: dict[str, Any]) -> dict[str, Any]:
    """The data block of the first user message."""
    content = request["messages"][0]["content"]
    text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
    match = _DATA.search(text)
    return json.loads(match.group(1)) if match else {}


def scripted(tool: str, data: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """A plausible, deterministic model: follows the engine's priors, scores by evidence strength."""
    if tool == "propose_actions":
        actions = sorted(data["actions"], key=lambda a: -a["prior"])
        picks = [actions[i % min(len(actions), 3)]["id"] for i in range(data["choose"])]
        return {"candidates": [{"action": a, "reason": "highest prior"} for a in picks]}
    if tool == "score_reflections":
        out = []
        for s in data["steps"]:
            best = max((ev["score"] for ev in s["new_evidence"]), default=0.0)
            out.append(
                {
                    "step": s["step"],
                    "e": round(0.3 + 0.7 * min(1.0, best / 10), 3),
                    "c_comp": 0.6,
                    "k": 0.8,
                    "note": "scored by evidence strength",
                }
            )
        return {"reflections": out}
    if tool == "choose_patches":  # the last offered first: a model with its own view
        return {"order": [{"patch": p["id"]} for p in reversed(data["patches"])]}
    if tool == "judge_decision":
        return {"lead": data["hypotheses"][0]["id"], "confidence": 0.7, "rationale": "strongest localised evidence"}
    return {"answer": "The leading hypothesis has the strongest localised evidence.", "cited": []}


@dataclass
class MessagesStandIn:
    brain: Brain = scripted
    script: list[tuple[int, dict[str, Any] | None]] = field(default_factory=list)  # queued (status, body) overrides
    api_key: str = "sk-ant-standin-key-0000000000"
    requests: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._prefixes: set[str] = set()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=10 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _messages(self, request: web.Request) -> web.Response:
        text = await request.text()
        self.raw.append(text)
        self.headers.append(dict(request.headers))
        if self.api_key not in (request.headers.get("x-api-key"), request.headers.get("Authorization", "")[7:]):
            return _error(401, "authentication_error", "invalid x-api-key")  # either header carries the key
        body = json.loads(text)
        self.requests.append(body)
        if self.script:
            status, scripted_body = self.script.pop(0)
            if status != 200:
                kind = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error"}.get(status, "api_error")
                return _error(status, kind, "scripted failure", retry_after="0" if status == 429 else None)
            if scripted_body is not None:
                return web.json_response(self._message(body, scripted_body))
        tool = body["tool_choice"]["name"]
        return web.json_response(self._message(body, self.brain(tool, telemetry_data(body), body)))

    def _message(self, body: dict[str, Any], tool_input: dict[str, Any]) -> dict[str, Any]:
        tool = body["tool_choice"]["name"]
        prefix = json.dumps([body.get("system"), body.get("tools")], sort_keys=True)
        prefix_tokens = len(prefix) // 4
        total = len(json.dumps(body)) // 4
        cacheable = prefix_tokens >= 1024 and "cache_control" in prefix
        read = prefix_tokens if cacheable and prefix in self._prefixes else 0
        write = prefix_tokens if cacheable and not read else 0
        if cacheable:
            self._prefixes.add(prefix)
        n = next(self._ids)
        return {
            "id": f"msg_standin{n:08d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "tool_use", "id": f"toolu_standin{n:08d}", "name": tool, "input": tool_input}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - read - write,
                "output_tokens": 20 + len(json.dumps(tool_input)) // 4,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
            },
        }


def _error(status: int, kind: str, message: str, *, retry_after: str | None = None) -> web.Response:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return web.json_response(
        {"type": "error", "error": {"type": kind, "message": message}}, status=status, headers=headers
    )
