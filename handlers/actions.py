"""The verdict's buttons and the feedback form: acknowledge, read the ids, call the front."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from handlers.front import Front
from handlers.ids import CORRECT, FEEDBACK_VIEW, REPAIR, RESUME, VERIFY, WRONG
from handlers.requests import NOT_ALLOWED


def _where(body: dict[str, Any]) -> tuple[str, str, str]:
    """(investigation id, channel, user) of a button click; empty strings when absent."""
    actions = body.get("actions") or [{}]
    value = str((actions[0] or {}).get("value") or "")
    channel = str((body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id") or "")
    return value, channel, str((body.get("user") or {}).get("id") or "")


def register(app: AsyncApp, front: Front) -> None:
    @app.action(REPAIR)
    async def on_repair(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        id, channel, user = _where(body)
        if not await front.may_act(user=user, channel=channel):
            await respond(response_type="ephemeral", replace_original=False, text=NOT_ALLOWED)
            return
        await front.repair(id, channel=channel, user=user)

    @app.action(RESUME)
    async def on_resume(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        id, channel, user = _where(body)
        if not await front.may_act(user=user, channel=channel):
            await respond(response_type="ephemeral", replace_original=False, text=NOT_ALLOWED)
            return
        await front.resume(id, channel=channel, user=user)

    @app.action(VERIFY)
    async def on_verify(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        id, channel, user = _where(body)
        await front.verify(id, channel=channel, user=user)

    @app.action(CORRECT)
    async def on_correct(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        id, channel, user = _where(body)
        await front.mark(id, channel=channel, user=user, correct=True, trigger_id=str(body.get("trigger_id") or ""))

    @app.action(WRONG)
    async def on_wrong(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        id, channel, user = _where(body)
        await front.mark(id, channel=channel, user=user, correct=False, trigger_id=str(body.get("trigger_id") or ""))

    @app.view(FEEDBACK_VIEW)
    async def on_feedback(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = (view.get("state") or {}).get("values") or {}
        cause = str(((values.get("cause") or {}).get("value") or {}).get("value") or "").strip()
        note = str(((values.get("note") or {}).get("value") or {}).get("value") or "").strip()
        error = await front.wrong_cause(str(view.get("private_metadata") or ""),
                                        user=str((body.get("user") or {}).get("id") or ""),
                                        true_cause=cause, note=note)  # fmt: skip
        if error:
            await ack(response_action="errors", errors={"cause": error[:150]})
        else:
            await ack()
