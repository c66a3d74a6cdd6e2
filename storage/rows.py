"""The bot's records as read back: an investigation, a repair, a mark of a verdict."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class InvestigationRow:
    id: str
    service: str
    window_start: float
    window_end: float
    channel: str
    user: str
    parent_ts: str
    thread_ts: str
    status: str  # running | done | failed | interrupted
    engine: str
    created: float
    finished: float | None
    top_service: str
    top_fault: str
    confidence: float | None
    score: float | None
    route: str
    blamed: str
    trace: dict[str, Any] | None
    audit: dict[str, Any] | None
    error: str
    missing: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FeedbackRow:
    investigation: str
    user: str
    correct: bool
    true_cause: str
    note: str
    created: float


@dataclass(frozen=True, slots=True)
class RepairRow:
    investigation: str
    before: float
    after: float
    decisive: str
    top_before: str
    top_after: str
    created: float
    trace: dict[str, Any]
    audit: dict[str, Any]
    steps: tuple[dict[str, Any], ...]


def investigation_row(r: dict[str, Any]) -> InvestigationRow:
    """A row of the investigations table as read back (JSON columns parsed, NULLs as empty)."""
    return InvestigationRow(
        id=r["id"],
        service=r["service"],
        window_start=r["window_start"],
        window_end=r["window_end"],
        channel=r["channel"],
        user=r["user"],
        parent_ts=r["parent_ts"] or "",
        thread_ts=r["thread_ts"] or "",
        status=r["status"],
        engine=r["engine"],
        created=r["created"],
        finished=r["finished"],
        top_service=r["top_service"] or "",
        top_fault=r["top_fault"] or "",
        confidence=r["confidence"],
        score=r["score"],
        route=r["route"] or "",
        blamed=r["blamed"] or "",
        trace=json.loads(r["trace"]) if r["trace"] else None,
        audit=json.loads(r["audit"]) if r["audit"] else None,
        error=r["error"] or "",
        missing=tuple(json.loads(r["missing"] or "[]")),
    )
