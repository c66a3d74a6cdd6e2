"""Slack payloads parsed once into typed values; anything malformed is None, never an exception.

Requests are signed by Slack, but a listener must still not trust their shape: a missing or
odd field means the payload is ignored (and logged), not that the app raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def text_at(obj: Any, *path: str, limit: int = 4000) -> str:
    """The string at a path of nested dicts, or "" when any step is not a dict or not there."""
    for key in path:
        if not isinstance(obj, dict):
            return ""
        obj = obj.get(key)
    return obj[:limit] if isinstance(obj, str) else ""


@dataclass(frozen=True, slots=True)
class Click:
    action_id: str
    value: str  # the investigation id the button carries
    channel: str
    user: str
    trigger_id: str
    team: str = ""  # the workspace of the user who clicked (Slack's streams in channels need it)


def parse_click(body: Any) -> Click | None:
    actions = body.get("actions") if isinstance(body, dict) else None
    first = actions[0] if isinstance(actions, list) and actions else None
    click = Click(
        text_at(first, "action_id"),
        text_at(first, "value", limit=64),
        text_at(body, "channel", "id") or text_at(body, "container", "channel_id"),
        text_at(body, "user", "id"),
        text_at(body, "trigger_id"),
        text_at(body, "user", "team_id") or text_at(body, "team", "id"),
    )
    return click if click.action_id and click.value and click.channel and click.user else None


@dataclass(frozen=True, slots=True)
class Message:
    channel: str
    user: str
    text: str
    thread_ts: str
    ts: str
    from_bot: bool
    subtype: str


def parse_message(event: Any) -> Message | None:
    if not isinstance(event, dict):
        return None
    message = Message(
        text_at(event, "channel"),
        text_at(event, "user"),
        text_at(event, "text"),
        text_at(event, "thread_ts"),
        text_at(event, "ts"),
        bool(event.get("bot_id")),
        text_at(event, "subtype"),
    )
    return message if message.channel and message.user else None


@dataclass(frozen=True, slots=True)
class Submission:
    investigation: str
    user: str
    cause: str
    note: str


def parse_submission(body: Any, view: Any) -> Submission | None:
    submission = Submission(
        text_at(view, "private_metadata", limit=64),
        text_at(body, "user", "id"),
        text_at(view, "state", "values", "cause", "value", "value", limit=200).strip(),
        text_at(view, "state", "values", "note", "value", "value", limit=2000).strip(),
    )
    return submission if submission.investigation and submission.user else None


@dataclass(frozen=True, slots=True)
class Command:
    text: str
    channel: str
    user: str
    team: str


def parse_command(command: Any) -> Command:
    return Command(
        text_at(command, "text", limit=100_000),
        text_at(command, "channel_id"),
        text_at(command, "user_id"),
        text_at(command, "team_id"),
    )


_OBJECTS = (
    "channel",
    "user",
    "team",
    "enterprise",
    "container",
    "message",
    "view",
    "event",
    "item",
    "assistant_thread",
    "authorizations",
)


def well_formed(body: Any) -> bool:
    """Whether a payload has the shape Slack gives it where listeners and Bolt's own routing
    look: those fields are objects or ids, actions a list of objects."""
    if not isinstance(body, dict):
        return False
    for key in _OBJECTS:
        value = body.get(key)
        if value is not None and not isinstance(value, str | dict | list):
            return False
        if isinstance(value, dict) and key in ("event", "message", "item") and not well_formed(value):
            return False
    if body.get("type") in ("view_submission", "view_closed"):
        view = body.get("view")
        if not isinstance(view, dict) or not isinstance(view.get("type"), str):
            return False
    actions = body.get("actions")
    return actions is None or (isinstance(actions, list) and all(isinstance(a, dict) for a in actions))
