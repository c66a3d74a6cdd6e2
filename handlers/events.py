"""Thread replies and mentions: follow-up questions about an investigation."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from handlers.front import Front
from handlers.payloads import Message, parse_message, text_at

_MENTION = re.compile(r"<@[A-Z0-9]+>")


def register(app: AsyncApp, front: Front) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        message = parse_message(event)
        if message is not None and not message.from_bot:
            await _follow_up(front, message, message.thread_ts or message.ts, addressed=True)

    @app.event("message")
    async def on_message(event: dict[str, Any], context: dict[str, Any]) -> None:
        message = parse_message(event)
        if message is None or message.subtype or message.from_bot or not message.thread_ts:
            return  # edits, joins, bots (rcabot itself) and top-level chatter are not questions
        bot_user = text_at(context, "bot_user_id")
        if bot_user and f"<@{bot_user}>" in message.text:
            return  # app_mention answers this one
        await _follow_up(front, message, message.thread_ts, addressed=False)


async def _follow_up(front: Front, message: Message, thread_ts: str, *, addressed: bool) -> None:
    if thread_ts:
        await front.follow_up(
            channel=message.channel,
            thread_ts=thread_ts,
            user=message.user,
            text=_MENTION.sub("", message.text).strip()[:2000],
            addressed=addressed,
        )
