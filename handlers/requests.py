"""What a `/rca` text asks for, parsed once into a typed request or a clear error."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from rca.errors import InputError

DEFAULT_WINDOW = "30m"
MAX_TEXT = 300

USAGE = ("*Usage:* `/rca <service> [window]`\n"
         "• window: `15m`, `1h30m`, `90s`, a clock range `14:05-14:35`, or an ISO range "
         "`2026-01-29T13:00Z/2026-01-29T13:30Z` (default 30m, ending now)\n"
         "• `/rca status` — investigations running in this channel\n"
         "• `/rca summary` — the last day's investigations\n"
         "• `/rca help` — this message\n"
         "Example: `/rca ts-order-service 30m`")  # fmt: skip


NOT_ALLOWED = "rcabot is not enabled for you in this channel; ask the team that runs it to add you."


class Kind(StrEnum):
    INVESTIGATE = "investigate"
    HELP = "help"
    STATUS = "status"
    SUMMARY = "summary"


@dataclass(frozen=True, slots=True)
class RcaCommand:
    kind: Kind
    service: str = ""
    window: str = DEFAULT_WINDOW


_SERVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$")
_WORDS = {"help": Kind.HELP, "status": Kind.STATUS, "summary": Kind.SUMMARY}


def parse_rca_command(text: str) -> RcaCommand:
    """`/rca <service> [window]`, `/rca help|status|summary`; InputError names what is wrong."""
    if len(text) > MAX_TEXT:
        raise InputError(f"that is {len(text)} characters; a /rca request is a service and a window")
    words = [w.strip("`'\"") for w in text.split()]
    words = [w for w in words if w and w.lower() not in ("last", "for", "over")]
    if not words or (len(words) == 1 and words[0].lower() in _WORDS):
        return RcaCommand(_WORDS[words[0].lower()] if words else Kind.HELP)
    service, rest = words[0], words[1:]
    if service.startswith("<") or not _SERVICE.match(service):
        raise InputError(f"{service[:60]!r} is not a service name (letters, digits, '-', '_', '.', ':', '/')")
    if len(rest) > 3:
        raise InputError("too many words: give a service and one window")
    window = "".join("-" if w.lower() == "to" else w for w in rest)  # `14:05 to 14:35`, `1h 30m`
    return RcaCommand(Kind.INVESTIGATE, service, window or DEFAULT_WINDOW)
