"""A webhook payload checked once: a capped JSON object, capped strings, RFC 3339 times, web links."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from rca.errors import InputError

MAX_VALUE = 1024


def json_object(body: bytes, max_body: int) -> dict[str, Any]:
    """A payload of at most `max_body` bytes that is a JSON object, else InputError saying why."""
    if len(body) > max_body:
        raise InputError(f"payload of {len(body)} bytes; at most {max_body}")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError("payload is not JSON") from None
    if not isinstance(data, dict):
        raise InputError("payload is not a JSON object")
    return data


def web_link(url: str) -> str:
    """The URL where it is an http(s) link with a host and no characters that break Slack's
    link markup; otherwise empty (a link is shown, never followed)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c in url for c in "<>| \n\t"):
        return ""
    return url.strip()


def text(value: object, where: str, *, limit: int = MAX_VALUE) -> str:
    """A string of at most `limit` characters, else InputError naming `where`."""
    if not isinstance(value, str) or len(value) > limit:
        raise InputError(f"{where} must be a string of at most {limit} characters")
    return value


def rfc3339(value: object, where: str, *, optional: bool = False) -> float | None:
    """An RFC 3339 time with its zone, as epoch seconds (0 for year 1, what Alertmanager sends
    for "not yet"); None for an empty `optional` one; else InputError naming `where`."""
    if value in (None, "") and optional:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise InputError(f"{where} must be an RFC 3339 time")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where} must be an RFC 3339 time") from None
    if moment.tzinfo is None:
        raise InputError(f"{where} must carry its time zone")
    return moment.timestamp() if moment.year > 1 else 0.0
