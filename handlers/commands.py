"""`/rca`: acknowledge at once, then parse, call the front, and reply."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from handlers.front import Front, reply
from handlers.payloads import parse_command
from handlers.requests import NOT_ALLOWED, USAGE, Kind, parse_rca_command
from rca.errors import InputError


def register(app: AsyncApp, front: Front, *, command: str = "/rca") -> None:
    @app.command(command)
    async def rca(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        parsed = parse_command(command)
        text, channel, user = parsed.text, parsed.channel, parsed.user
        if not channel or not user:
            await ack(response_type="ephemeral", text="This request names no channel or user; try again in a channel.")
            return
        try:
            request = parse_rca_command(text)
        except InputError as exc:
            await ack(response_type="ephemeral", text=f"{exc}\n\n{USAGE}")
            return
        if request.kind is Kind.HELP:
            await ack(response_type="ephemeral", text=USAGE)
            return
        if request.kind is Kind.STATUS:  # acked first: the status reads the database
            await ack()
            await reply(respond, await front.status_text(channel))
            return
        # the allow-list may ask Slack who is in a user group: that comes after the ack
        if request.kind is Kind.SUMMARY:
            await ack(response_type="ephemeral", text="Posting the last day's summary…")
        else:
            await ack()
        if not await front.may_act(user=user, channel=channel):
            await reply(respond, NOT_ALLOWED)
            return
        if request.kind is Kind.SUMMARY:
            await front.post_summary(channel)
        elif request.kind is Kind.CHANGES:
            await reply(respond, await front.changes_text(request.service, request.window, user=user))
        elif request.kind in (Kind.SUBSCRIBE, Kind.UNSUBSCRIBE):
            await reply(
                respond, await front.schedule_summary(channel=channel, user=user, at=request.at or None, tz=request.tz)
            )
        else:
            await front.investigate(request, channel=channel, user=user, team=parsed.team, respond=respond)
