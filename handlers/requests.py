"""What a `/rca` text asks for, parsed once into a typed request or a clear error."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from rca.errors import InputError

DEFAULT_WINDOW = "30m"
MAX_TEXT = 300

USAGE = (
    "*Usage:* `/rca <service> [window]`\n"
    "• window: `15m`, `1h30m`, `90s`, `last hour`, a clock range `14:05-14:35`, or an ISO range "
    "`2026-01-29T13:00Z/2026-01-29T13:30Z` (default 30m, ending now)\n"
    "• `/rca status` — investigations running in this channel\n"
    "• `/rca summary` — this channel's investigations of the last day\n"
    "• `/rca summary daily 09:00 [Europe/Berlin]` — post that summary here every day (`/rca summary off` stops it)\n"
    "• `/rca changes [service] [window]` — deploys, config pushes and flags recorded in the window\n"
    "• `/rca help` — this message\n"
    "Example: `/rca ts-order-service 30m`"
)


NOT_ALLOWED = "rcabot is not enabled for you in this channel; ask the team that runs it to add you."


class Kind(StrEnum):
    INVESTIGATE = "investigate"
    HELP = "help"
    STATUS = "status"
    SUMMARY = "summary"
    SUBSCRIBE = "subscribe"  # the daily summary in this channel: at `at` in `tz`
    UNSUBSCRIBE = "unsubscribe"
    CHANGES = "changes"  # what changed in `window`, to `service` (any service where it is empty)


@dataclass(frozen=True, slots=True)
class RcaCommand:
    kind: Kind
    service: str = ""
    window: str = DEFAULT_WINDOW
    at: str = ""
    tz: str = "UTC"


SERVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$")
_WINDOWISH = re.compile(r"^(\d[\d:.hmsdw]*(-.*)?|\d{4}-\d\d-\d\dT.*)$", re.IGNORECASE)
_WORDS = {"help": Kind.HELP, "status": Kind.STATUS, "summary": Kind.SUMMARY}


def parse_rca_command(text: str) -> RcaCommand:
    """`/rca <service> [window]`, `/rca help|status|summary`, `/rca summary daily HH:MM [zone]`,
    `/rca summary off`; InputError names what is wrong."""
    if len(text) > MAX_TEXT:
        raise InputError(f"that is {len(text)} characters; a /rca request is a service and a window")
    words = [w.strip("`'\"") for w in text.split()]
    words = [w for w in words if w and w.lower() not in ("last", "past", "the", "for", "over")]
    if not words or (len(words) == 1 and words[0].lower() in _WORDS):
        return RcaCommand(_WORDS[words[0].lower()] if words else Kind.HELP)
    if words[0].lower() == "summary":
        return _summary(words[1:])
    if words[0].lower() == "changes":
        return _changes(words[1:])
    service, rest = words[0], words[1:]
    if service.startswith("<") or not SERVICE_NAME.match(service):
        raise InputError(f"{service[:60]!r} is not a service name (letters, digits, '-', '_', '.', ':', '/')")
    if len(rest) > 3:
        raise InputError("too many words: give a service and one window")
    window = " ".join("-" if w.lower() == "to" else w for w in rest)  # `14:05 to 14:35`, `1h 30m`, `1 hour`
    return RcaCommand(Kind.INVESTIGATE, service, window or DEFAULT_WINDOW)


def _changes(words: list[str]) -> RcaCommand:
    """`[service] [window]`: a first word that reads as a window (`15m`, `14:05-14:35`) is the
    window, of any service."""
    if words and not _WINDOWISH.match(words[0]):
        service, words = words[0], words[1:]
        if service.startswith("<") or not SERVICE_NAME.match(service):
            raise InputError(f"{service[:60]!r} is not a service name (letters, digits, '-', '_', '.', ':', '/')")
    else:
        service = ""
    if len(words) > 3:
        raise InputError("too many words: `/rca changes [service] [window]`")
    window = " ".join("-" if w.lower() == "to" else w for w in words)
    return RcaCommand(Kind.CHANGES, service, window or DEFAULT_WINDOW)


def _summary(words: list[str]) -> RcaCommand:
    """`daily HH:MM [zone]` or `off` (the time and zone are checked where the schedule is kept)."""
    if [w.lower() for w in words] in (["off"], ["stop"]):
        return RcaCommand(Kind.UNSUBSCRIBE)
    if words and words[0].lower() == "daily" and len(words) in (2, 3):
        return RcaCommand(Kind.SUBSCRIBE, at=words[1], tz=words[2] if len(words) == 3 else "UTC")
    raise InputError("a summary subscription reads `/rca summary daily 09:00 [Europe/Berlin]` or `/rca summary off`")
