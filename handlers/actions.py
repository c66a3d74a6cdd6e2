"""The verdict's buttons and the feedback form: acknowledge, parse, call the front."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from handlers.front import Front, reply
from handlers.ids import CORRECT, FEEDBACK_VIEW, REPAIR, RESUME, VERIFY, WRONG
from handlers.payloads import parse_click, parse_submission
from handlers.requests import NOT_ALLOWED

log = logging.getLogger("rcabot.handlers")
GUARDED = (REPAIR, RESUME)  # buttons that start work: the allow-list applies


def register(app: AsyncApp, front: Front) -> None:
    @app.action(REPAIR)
    @app.action(RESUME)
    @app.action(VERIFY)
    @app.action(CORRECT)
    @app.action(WRONG)
    async def on_click(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        click = parse_click(body)
        if click is None:
            log.warning("ignored a malformed button payload")
            return
        if click.action_id in GUARDED and not await front.may_act(user=click.user, channel=click.channel):
            await reply(respond, NOT_ALLOWED, replace_original=False)
            return
        where = {"channel": click.channel, "user": click.user}
        if click.action_id == REPAIR:
            await front.repair(click.value, team=click.team, **where)
        elif click.action_id == RESUME:
            await front.resume(click.value, team=click.team, **where)
        elif click.action_id == VERIFY:
            await front.verify(click.value, **where)
        else:
            await front.mark(click.value, correct=click.action_id == CORRECT, trigger_id=click.trigger_id, **where)

    @app.view(FEEDBACK_VIEW)
    async def on_feedback(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        submission = parse_submission(body, view)
        if submission is None:
            await ack(response_action="errors", errors={"cause": "This form lost its investigation; mark it again."})
            return
        # recorded before the ack (a wrong cause is shown in the form), told in the thread after it
        error = await front.wrong_cause(
            submission.investigation, user=submission.user, true_cause=submission.cause, note=submission.note
        )
        if error:
            await ack(response_action="errors", errors={"cause": error[:150]})
            return
        await ack()
        await front.announce_wrong(submission.investigation, user=submission.user, true_cause=submission.cause)
