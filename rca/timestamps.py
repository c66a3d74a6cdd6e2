"""Timestamps in the forms telemetry writes them, turned into UTC epoch seconds."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from rca.errors import InputError

# Go's time.String() appends a monotonic reading ("m=+60.09") and repeats the zone name.
_GO_SUFFIX = re.compile(r"\s+m=[+-][0-9.]+$")
_ZONE_NAME = re.compile(r"(\s[+-]\d{4})\s+[A-Z]{2,5}$")
_FRACTION = re.compile(r"\.(\d+)")

# Epoch magnitudes: seconds until ~5e9 (year 2128), then ms, us, ns.
_EPOCH_SCALES = ((1e11, 1.0), (1e14, 1e3), (1e17, 1e6), (math.inf, 1e9))


def from_epoch(value: float) -> float:
    """Epoch seconds from a number in seconds, milliseconds, microseconds or nanoseconds."""
    if not math.isfinite(value):
        raise InputError(f"timestamp is not a finite number: {value}")
    magnitude = abs(value)
    for bound, scale in _EPOCH_SCALES:
        if magnitude < bound:
            return value / scale
    raise AssertionError("unreachable")


_STRPTIME = (
    "%d/%b/%Y:%H:%M:%S %z",  # Apache / nginx access logs: 10/Oct/2000:13:55:36 -0700
    "%Y/%m/%d %H:%M:%S.%f",  # Go's log package: 2009/11/10 23:00:00.000001
    "%Y/%m/%d %H:%M:%S",
    "%a %b %d %H:%M:%S %Y",  # C's asctime: Tue Nov 10 23:00:00 2009
    "%a, %d %b %Y %H:%M:%S %z",  # RFC 1123 / email
    "%d-%b-%Y %H:%M:%S.%f",  # Tomcat: 05-Jan-2024 10:11:12.345
)
_SYSLOG = re.compile(r"^([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{2}:\d{2}:\d{2})$")  # Jan  5 10:11:12 (no year)


def parse_timestamp(text: str | float | int, *, year: int | None = None) -> float:
    """UTC epoch seconds from ISO 8601 (any offset), Go, Java, Apache, syslog and other date
    strings, or epoch numbers in s, ms, us or ns. A string without a zone is read as UTC; a
    syslog stamp without a year takes `year` (this year by default).
    """
    if isinstance(text, int | float):
        return from_epoch(float(text))
    raw = text.strip()
    if not raw:
        raise InputError("empty timestamp")
    if re.fullmatch(r"[+-]?\d+(\.\d+)?", raw):
        return from_epoch(float(raw))
    cleaned = _GO_SUFFIX.sub("", raw)
    cleaned = _ZONE_NAME.sub(r"\1", cleaned)
    cleaned = cleaned.replace(",", ".")  # Java's "08:41:10,171"
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    # Python parses at most microseconds: trim nanosecond fractions.
    cleaned = _FRACTION.sub(lambda m: "." + m.group(1)[:6], cleaned, count=1)
    cleaned = re.sub(r"\s([+-]\d{2}):?(\d{2})$", r"\1:\2", cleaned)
    try:
        parsed = datetime.fromisoformat(cleaned)
    except ValueError:
        parsed = _other_forms(raw, year)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _other_forms(raw: str, year: int | None) -> datetime:
    text = raw.strip("[]")
    for form in _STRPTIME:
        try:
            return datetime.strptime(text, form)
        except ValueError:
            continue
    syslog = _SYSLOG.match(text)
    if syslog:
        month, day, clock = syslog.groups()
        when = year if year is not None else datetime.now(UTC).year
        try:
            return datetime.strptime(f"{when} {month} {day} {clock}", "%Y %b %d %H:%M:%S")
        except ValueError:
            pass
    raise InputError(f"unrecognised timestamp {raw!r}")
