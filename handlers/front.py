"""What the Slack listeners call: the bot's Slack front, as a Protocol (the bot provides it)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import aiohttp
from slack_sdk.errors import SlackApiError

from handlers.requests import RcaCommand

log = logging.getLogger("rcabot.handlers")

Respond = Callable[..., Awaitable[object]]


async def reply(respond: Respond, text: str, **fields: object) -> None:
    """An ephemeral reply through the response URL; a reply that cannot be delivered is logged,
    not raised (the user sees nothing more, the bot goes on)."""
    try:
        await respond(response_type="ephemeral", text=text, **fields)
    except (aiohttp.ClientError, TimeoutError, SlackApiError) as exc:
        log.warning("could not reply through the response URL: %s", type(exc).__name__)


class Front(Protocol):
    async def may_act(self, *, user: str, channel: str) -> bool:
        """Whether this user may start investigations and repairs in this channel."""
        ...

    async def status_text(self, channel: str) -> str:
        """The running investigations of a channel, as a message (what the database holds read
        off the event loop; what it cannot give said as unavailable)."""
        ...

    async def investigate(self, command: RcaCommand, *, channel: str, user: str, team: str, respond: Respond) -> None:
        """Open an investigation, stream it into a thread and post the verdict."""
        ...

    async def changes_text(self, service: str, window: str, *, user: str) -> str:
        """The changes recorded in the window (to `service`, or to any where it is empty), as a
        message in the user's time zone; a bad window or an unreadable record said plainly."""
        ...

    async def post_summary(self, channel: str) -> None:
        """Post the channel's own investigations of the last day into it."""
        ...

    async def schedule_summary(self, *, channel: str, user: str, at: str | None, tz: str) -> str:
        """Subscribe the channel to a daily summary at `at` (HH:MM) in `tz`, or (None) stop it;
        what to tell the user, a bad time or zone included."""
        ...

    async def repair(self, investigation: str, *, channel: str, user: str, team: str) -> None: ...

    async def verify(self, investigation: str, *, channel: str, user: str) -> None: ...

    async def resume(self, investigation: str, *, channel: str, user: str, team: str) -> None:
        """Run an investigation a stop cut short again, in its thread."""
        ...

    async def mark(self, investigation: str, *, channel: str, user: str, correct: bool, trigger_id: str) -> None:
        """Feedback from a button: correct is kept at once; wrong asks for the true cause."""
        ...

    async def wrong_cause(self, investigation: str, *, user: str, true_cause: str, note: str) -> str | None:
        """The true cause from the feedback form, recorded (no Slack call: it runs before the
        ack); an error text for the form, or None."""
        ...

    async def announce_wrong(self, investigation: str, *, user: str, true_cause: str) -> None:
        """Tell the investigation's thread that it was marked wrong (after the form's ack)."""
        ...

    async def follow_up(self, *, channel: str, thread_ts: str, user: str, text: str, addressed: bool) -> None:
        """Answer a question asked in an investigation's thread: always when the bot was
        mentioned (`addressed`), otherwise only a reply that asks a question; chatter is left
        alone, and so is a thread past its question budget."""
        ...
