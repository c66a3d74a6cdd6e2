"""Thread replies and mentions: follow-up questions about an investigation."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from handlers.front import Front

_MENTION = re.compile(r"<@[A-Z0-9]+>")


def register(app: AsyncApp, front: Front) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        await _follow_up(front, event, thread_ts=str(event.get("thread_ts") or event.get("ts") or ""))

    @app.event("message")
    async def on_message(event: dict[str, Any], context: dict[str, Any]) -> None:
        if event.get("subtype") or event.get("bot_id") or not event.get("thread_ts"):
            return  # edits, joins, bots (rcabot itself) and top-level chatter are not questions
        bot_user = str(context.get("bot_user_id") or "")
        if bot_user and f"<@{bot_user}>" in str(event.get("text") or ""):
            return  # app_mention answers this one
        await _follow_up(front, event, thread_ts=str(event["thread_ts"]))


async def _follow_up(front: Front, event: dict[str, Any], *, thread_ts: str) -> None:
    text = _MENTION.sub("", str(event.get("text") or "")).strip()
    channel, user = str(event.get("channel") or ""), str(event.get("user") or "")
    if channel and thread_ts and user and not event.get("bot_id"):
        await front.follow_up(channel=channel, thread_ts=thread_ts, user=user, text=text[:2000])
