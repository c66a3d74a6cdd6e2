"""Parsing the window a person types: `30m`, `1h30m`, `90s`, `14:05-14:35`, an ISO range."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from rca.errors import InputError, WindowError
from rca.telemetry import Window
from rca.timestamps import parse_timestamp

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_CLOCK_RANGE = re.compile(r"^(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})$")
MAX_WINDOW_SECONDS = 7 * 24 * 3600


_UNITS = (
    (re.compile(r"(\d+)\s*(?:seconds?|secs?)\b"), "s"),
    (re.compile(r"(\d+)\s*(?:minutes?|mins?)\b"), "m"),
    (re.compile(r"(\d+)\s*(?:hours?|hrs?)\b"), "h"),
    (re.compile(r"(\d+)\s*(?:days?)\b"), "d"),
)


_ONE = re.compile(r"^(?:(?:an?|one)\s+)?(?=(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)\b)")


def parse_duration(text: str) -> float:
    """Seconds from `90s`, `15m`, `1h30m`, `2d`, `1 hour`, `1h 30m`, `90 minutes`, and a unit
    said alone (`hour`, `an hour`, `a day`), which is one of it."""
    raw = _ONE.sub("1 ", text.strip().lower(), count=1)
    for unit, letter in _UNITS:
        raw = unit.sub(r"\g<1>" + letter, raw)
    raw = re.sub(r"\s+", "", raw)
    match = _DURATION.match(raw)
    if not raw or match is None or not any(match.groups()):
        raise WindowError(text, "expected a duration like 90s, 15m, 1h30m")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = float(days * 86400 + hours * 3600 + minutes * 60 + seconds)
    if total <= 0:
        raise WindowError(text, "duration must be positive")
    if total > MAX_WINDOW_SECONDS:
        raise WindowError(text, "duration is longer than 7 days")
    return total


def parse_window(text: str, *, now: float) -> Window:
    """A Window from a duration ending at `now`, a clock range on `now`'s day, or an ISO range."""
    raw = text.strip()
    if not raw:
        raise WindowError(text, "empty window")
    if len(raw) > 100:
        raise WindowError(raw[:40] + "...", "too long")
    clock = _CLOCK_RANGE.match(raw)
    if clock:
        return _clock_window(raw, clock.groups(), now=now)
    if "/" in raw or ".." in raw:
        return _iso_window(raw)
    seconds = parse_duration(raw)
    return Window(now - seconds, now)


def _clock_window(raw: str, groups: tuple[str | None, ...], *, now: float) -> Window:
    h1, m1, h2, m2 = (int(g or 0) for g in groups)
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise WindowError(raw, "clock times must be HH:MM within 00:00-23:59")
    day = datetime.fromtimestamp(now, tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = day + timedelta(hours=h1, minutes=m1)
    end = day + timedelta(hours=h2, minutes=m2)
    if end <= start:  # a range across midnight ends on the next day
        end += timedelta(days=1)
    if start.timestamp() > now:  # a range later than now today means yesterday's
        start -= timedelta(days=1)
        end -= timedelta(days=1)
    return Window(start.timestamp(), end.timestamp())


def _iso_window(raw: str) -> Window:
    parts = raw.split("/") if "/" in raw else raw.split("..")
    if len(parts) != 2:
        raise WindowError(raw, "an ISO range is START/END")
    try:
        start, end = (parse_timestamp(p) for p in parts)
    except InputError as exc:
        raise WindowError(raw, str(exc)) from exc
    if end <= start:
        raise WindowError(raw, "the range must end after it starts")
    if end - start > MAX_WINDOW_SECONDS:
        raise WindowError(raw, "the range is longer than 7 days")
    return Window(start, end)
