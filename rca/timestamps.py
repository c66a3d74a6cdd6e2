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


def parse_timestamp(text: str | float | int) -> float:
    """UTC epoch seconds from ISO 8601, Go/Java date strings, or epoch numbers.

    A string without a zone is read as UTC.
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
    except ValueError as exc:
        raise InputError(f"unrecognised timestamp {text!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
