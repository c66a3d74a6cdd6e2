"""The live thread's stream, against the stand-in's rules for Slack's streaming methods."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.stream import ThreadStream
from tests.bot.slack_standin import TEAM, SlackStandIn


async def _with_standin(body: object) -> SlackStandIn:
    slack = SlackStandIn()
    await slack.start()
    try:
        client = AsyncWebClient(token=slack.token, base_url=slack.api_url)
        await body(client, slack)  # type: ignore[operator]
    finally:
        await slack.stop()
    return slack


def test_a_stream_closed_before_its_first_flush_is_still_stopped() -> None:
    async def body(client: AsyncWebClient, slack: SlackStandIn) -> None:
        stream = ThreadStream(
            client, channel="C0INCIDENT", thread_ts="1700000000.000001", team_id=TEAM, user_id="U0ONCALL", interval=30.0
        )
        await stream.add("reading metrics")
        await stream.close("done")
        assert slack.of("chat.startStream") and slack.open_streams() == []
        said = " ".join(str(c.params.get("markdown_text") or c.params.get("chunks") or "") for c in slack.calls)
        assert "reading metrics" in said and "done" in said

    asyncio.run(_with_standin(body))


def test_a_stream_in_a_channel_names_its_recipient_or_slack_refuses_it() -> None:
    async def body(client: AsyncWebClient, slack: SlackStandIn) -> None:
        with pytest.raises(SlackApiError) as refused:  # Slack's rule, kept by the stand-in
            await client.chat_startStream(channel="C0INCIDENT", thread_ts="1700000000.000001")
        assert refused.value.response["error"] == "invalid_arguments"
        # so a stream with no one to name (an investigation an alert started) does not ask for one
        anonymous = ThreadStream(
            client, channel="C0INCIDENT", thread_ts="1700000000.000001", interval=0.0, stream=False
        )
        await anonymous.add("one line")
        await anonymous.close()
        assert anonymous.mode == "update" and len(slack.of("chat.startStream")) == 1
        assert slack.of("chat.postMessage")
        named = ThreadStream(
            client, channel="C0INCIDENT", thread_ts="1700000000.000002", team_id=TEAM, user_id="U0ONCALL", interval=0.0
        )
        await named.add("one line")
        await named.close()
        assert named.mode == "stream" and slack.open_streams() == []

    asyncio.run(_with_standin(body))
