"""Slack Web API calls whose failure is logged, not raised: the rest of a reply goes on."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blockkit
from bot.verdicts import Chart

log = logging.getLogger("rcabot.slack")


class Poster:
    """Posts into threads and uploads charts through one Web API client."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post(self, channel: str, thread_ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        await call(self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text[:3000], blocks=blocks))

    async def chart(self, channel: str, thread_ts: str, chart: Chart | None, comment: str) -> None:
        if chart is None:
            return
        await call(
            self.client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                content=chart.png,
                filename="rcabot-chart.png",
                title=chart.title,
                initial_comment=blockkit.plain(comment[:200]),
            )
        )


async def call(request: Awaitable[Any]) -> None:
    """A Web API call whose failure is logged, not raised."""
    try:
        await request
    except SlackApiError as exc:
        log.warning("Slack call failed: %s", exc.response.get("error", exc))
