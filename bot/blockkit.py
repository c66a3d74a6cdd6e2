"""Slack's Block Kit, the pieces every message is made of: a section, a context line, text made
safe to show, the limits Slack sets, times in the reader's zone, and the blocks read back as
the plain text the console shows (bot.render and bot.replies write the messages themselves)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from rca.redact import redact
from rca.telemetry import Window

Block = dict[str, Any]
SECTION_MAX = 2800
MAX_BLOCKS = 45


def clip(text: str, n: int = SECTION_MAX) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text)}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text, 2900)}]}


def plain(text: str) -> str:
    """Text from telemetry or a person, shown in Slack: credentials redacted, and escaped so it
    cannot be read as markup (a mention, a link, a broadcast)."""
    return redact(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def limit(blocks: list[Block]) -> list[Block]:
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    return blocks[: MAX_BLOCKS - 1] + [context(f"… {len(blocks) - MAX_BLOCKS + 1} more block(s) left out")]


def clock(t: float, tz: str) -> str:
    """A moment as a person in that time zone reads it: `2026-12-02 09:00 Europe/Berlin`."""
    return f"{datetime.fromtimestamp(t, ZoneInfo(tz)):%Y-%m-%d %H:%M} {tz}"


def at(t: float, tz: str = "UTC", *, near: float | None = None) -> str:
    """A moment in the reader's zone: `14:05 CET`, with its date where it falls on another
    day than `near` (or always, without `near`)."""
    zone = ZoneInfo(tz)
    moment = datetime.fromtimestamp(t, zone)
    if near is not None and datetime.fromtimestamp(near, zone).date() == moment.date():
        return f"{moment:%H:%M %Z}"
    return f"{moment:%Y-%m-%d %H:%M %Z}"


def window_text(w: Window, tz: str = "UTC") -> str:
    return f"{at(w.start, tz)} → {at(w.end, tz, near=w.start)} ({w.seconds / 60:.0f} min)"


def as_text(blocks: Sequence[Block]) -> str:
    """Blocks as plain terminal text, for the console: the same words Slack shows."""
    out = []
    for b in blocks:
        if b["type"] in ("section", "header"):
            out.append(b["text"]["text"])
        elif b["type"] == "context":
            out.append("  " + " ".join(e.get("text", "") for e in b["elements"]))
        elif b["type"] == "actions":
            out.append("[" + "] [".join(e["text"]["text"] for e in b["elements"]) + "]")
    text = "\n".join(out)
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r"\2: \1", text)
    text = text.replace("*", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text
