"""`rcabot serve` in Socket Mode (SLACK_APP_TOKEN set), as a real process: it opens a
connection through apps.connections.open, takes a /rca envelope over the WebSocket, acks it
and runs the investigation into a thread."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

from handlers.ids import REPAIR
from lab.processes import free_port
from tests.bot.slack_standin import TEAM, SlackStandIn, serve_process, wait_until_up


def test_socket_mode_end_to_end(tmp_path: Path) -> None:
    async def scenario() -> None:
        slack = SlackStandIn()
        await slack.start()
        port = free_port()
        proc = serve_process(
            slack, secret="", port=port, db=tmp_path / "rcabot.db", extra={"SLACK_APP_TOKEN": slack.app_token}
        )
        try:
            await wait_until_up(port)  # the health check serves in Socket Mode too
            await slack.wait_for(lambda c: c.method == "apps.connections.open", timeout=30)
            payload = {
                "token": "legacy",
                "team_id": TEAM,
                "channel_id": "C0SOCKET",
                "user_id": "U0ONCALL",
                "command": "/rca",
                "text": "Frontend 10m",
                "api_app_id": "A0RCABOT",
                "response_url": slack.response_url(),
                "trigger_id": "socket.1",
            }
            await slack.socket_outbox.put(
                {"envelope_id": "env-1", "type": "slash_commands", "payload": payload, "accepts_response_payload": True}
            )
            verdict = await slack.wait_for(
                lambda c: c.method == "chat.postMessage" and REPAIR in json.dumps(c.params.get("blocks"))
            )
            assert verdict.params["channel"] == "C0SOCKET" and verdict.params["thread_ts"]
            assert any(m.get("envelope_id") == "env-1" for m in slack.socket_inbox)  # acknowledged
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
            await slack.stop()

    asyncio.run(scenario())
