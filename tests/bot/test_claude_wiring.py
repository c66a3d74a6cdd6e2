"""The Claude reasoner wired into the CLI, the settings and the desk's follow-up answers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import read_settings
from bot.desk import Desk
from bot.telemetry import ReplayTelemetry
from rca.errors import InputError
from rca.reasoners.claude import ClaudeReasoner
from rca.reasoners.offline import OfflineReasoner
from rca.timestamps import parse_timestamp
from storage.investigations import Store
from tests.rca.reasoners.anthropic_standin import MessagesStandIn


@pytest.fixture()
def messages_api() -> Iterator[MessagesStandIn]:
    """The stand-in served from its own thread, so synchronous code (the CLI) can call it."""
    api = MessagesStandIn()
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(api.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    yield api
    asyncio.run_coroutine_threadsafe(api.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def test_settings_choose_the_reasoner() -> None:
    assert isinstance(read_settings({}).build_reasoner(), OfflineReasoner)
    claude = read_settings({"ANTHROPIC_API_KEY": "sk-ant-x", "RCABOT_LLM_MAX_CALLS": "7"})
    assert claude.reasoner == "claude" and claude.claude().max_calls == 7
    assert "sk-ant-x" not in repr(claude)  # the key never reaches a log line
    assert read_settings({"ANTHROPIC_API_KEY": "k", "RCABOT_REASONER": "offline"}).reasoner == "offline"
    with pytest.raises(InputError, match="needs ANTHROPIC_API_KEY"):
        read_settings({"RCABOT_REASONER": "claude"})
    with pytest.raises(InputError, match="RCABOT_LLM_MAX_CALLS"):
        read_settings({"RCABOT_LLM_MAX_CALLS": "-1"})


def test_investigate_with_claude_reports_model_cost(
    messages_api: MessagesStandIn,
    nezha_slice: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", messages_api.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_api.base_url)
    code = main(
        [
            "investigate",
            "Frontend",
            "10m",
            "--data",
            str(nezha_slice),
            "--at",
            "2023-01-29T13:36:00Z",
            "--quiet",
            "--reasoner",
            "claude",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    calls = len(messages_api.requests)
    assert 0 < calls <= 20 and f"{calls} model calls" in out


def test_follow_up_answered_by_claude_from_the_trace(
    messages_api: MessagesStandIn, nezha_slice: Path, tmp_path: Path
) -> None:
    settings = read_settings({"ANTHROPIC_API_KEY": messages_api.api_key, "ANTHROPIC_BASE_URL": messages_api.base_url})

    async def scenario() -> None:
        desk = Desk(
            telemetry=ReplayTelemetry(nezha_slice, now=parse_timestamp("2023-01-29T13:36:00Z")),
            store=Store(tmp_path / "bot.db"),
            workers=1,
            reasoner=settings.build_reasoner(),
        )
        assert isinstance(desk.reasoner, ClaudeReasoner)
        run = await desk.open("Frontend", "10m", channel="C1", user="U1")
        async for _ in desk.investigate(run):
            pass
        before = len(messages_api.requests)
        reply, _ = await desk.followups.ask(run.id, "why is the order service not the cause?", user="U1")
        assert len(messages_api.requests) == before + 1
        asked = messages_api.requests[-1]
        assert asked["tool_choice"]["name"] == "answer_question"
        assert "strongest localised evidence" in reply.text
        desk.close()

    asyncio.run(scenario())
