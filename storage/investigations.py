"""The bot's record in SQLite (sqlite-utils, WAL): investigations with their traces and audits,
repairs, verification runs, feedback, follow-up questions, and the Slack deliveries seen.

Every write is one transaction, so a crash leaves either the whole row or none of it; an
investigation still marked running when the process starts again is marked interrupted.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.database import open_database

SCHEMA: dict[str, tuple[dict[str, type], str]] = {
    "investigations": ({
        "id": str, "service": str, "window_start": float, "window_end": float, "channel": str,
        "user": str, "parent_ts": str, "thread_ts": str, "status": str, "engine": str,
        "created": float, "finished": float, "top_service": str, "top_fault": str,
        "confidence": float, "score": float, "route": str, "blamed": str, "trace": str,
        "audit": str, "error": str, "missing": str,
    }, "id"),  # fmt: skip
    "repairs": ({"id": int, "investigation": str, "created": float, "before": float, "after": float,
                 "decisive": str, "steps": str, "trace": str, "audit": str, "top_before": str,
                 "top_after": str}, "id"),  # fmt: skip
    "verifications": ({"id": int, "investigation": str, "created": float, "run": str}, "id"),
    "feedback": ({"id": int, "investigation": str, "created": float, "user": str, "correct": int,
                  "true_cause": str, "note": str}, "id"),  # fmt: skip
    "questions": ({"id": int, "investigation": str, "created": float, "user": str, "question": str,
                   "answer": str}, "id"),  # fmt: skip
    "seen_deliveries": ({"key": str, "seen": float}, "key"),
}


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


class Store:
    """The bot's SQLite file; safe to share between the event loop and worker threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = open_database(self.path)
        self._lock = threading.Lock()
        for name, (columns, pk) in SCHEMA.items():
            if not self._db[name].exists():  # type: ignore[union-attr]
                self._db.create_table(name, columns, pk=pk)
        for table, cols in (("investigations", ["channel", "thread_ts"]), ("investigations", ["created"]),
                            ("repairs", ["investigation"]), ("feedback", ["investigation"])):  # fmt: skip
            self._db[table].create_index(cols, if_not_exists=True)  # type: ignore[union-attr]
        with self._write():
            running = [r["id"] for r in self._db["investigations"].rows_where("status = 'running'")]  # type: ignore[union-attr]
            self._db.execute("update investigations set status = 'interrupted', error = "
                             "'the bot stopped before this investigation finished' where status = 'running'")  # fmt: skip
        self.recovered: tuple[str, ...] = tuple(running)  # cut short by the last stop: offered for resuming

    @contextmanager
    def _write(self) -> Iterator[None]:
        with self._lock, self._db.conn:  # one transaction: committed whole or not at all
            yield

    def close(self) -> None:
        with self._lock:  # not while another thread is inside a query: that would crash sqlite
            self._db.close()

    # -- deliveries --------------------------------------------------------------------------
    def first_delivery(self, key: str) -> bool:
        """True the first time a Slack delivery key is seen, False for every retry of it."""
        try:
            with self._write():
                self._db.execute("insert into seen_deliveries (key, seen) values (?, ?)", [key, time.time()])
        except sqlite3.IntegrityError:
            return False
        return True

    # -- investigations ----------------------------------------------------------------------
    def start(self, *, id: str, service: str, window: tuple[float, float], channel: str, user: str,
              engine: str) -> None:  # fmt: skip
        row = {"id": id, "service": service, "window_start": window[0], "window_end": window[1],
               "channel": channel, "user": user, "parent_ts": "", "thread_ts": "", "status": "running",
               "engine": engine, "created": time.time(), "error": "", "missing": "[]"}  # fmt: skip
        with self._write():
            self._db["investigations"].insert(row)  # type: ignore[union-attr]

    def set_thread(self, id: str, *, parent_ts: str, thread_ts: str) -> None:
        self._update(id, parent_ts=parent_ts, thread_ts=thread_ts)

    def finish(self, id: str, *, trace: dict[str, Any], audit: dict[str, Any]) -> None:
        ranking = trace["decision_report"]["ranking"]
        top = ranking[0] if ranking else {}
        self._update(id, status="done", finished=time.time(), trace=json.dumps(trace), audit=json.dumps(audit),
                     top_service=top.get("service", ""), top_fault=top.get("fault_type", ""),
                     confidence=top.get("confidence"), score=audit["score"], route=audit["route"],
                     blamed=audit.get("blamed_stage") or "",
                     missing=json.dumps(trace["evidence_package"]["missing"]))  # fmt: skip

    def fail(self, id: str, error: str) -> None:
        self._update(id, status="failed", finished=time.time(), error=error[:2000])

    def _update(self, id: str, **values: Any) -> None:
        with self._write():
            self._db["investigations"].update(id, values)  # type: ignore[union-attr]

    def investigation(self, id: str) -> InvestigationRow | None:
        with self._lock:
            rows = list(self._db["investigations"].rows_where("id = ?", [id]))  # type: ignore[union-attr]
        return _investigation(rows[0]) if rows else None

    def by_thread(self, channel: str, thread_ts: str) -> InvestigationRow | None:
        """The investigation whose Slack thread this is."""
        with self._lock:
            rows = list(self._db["investigations"].rows_where(  # type: ignore[union-attr]
                "channel = ? and thread_ts = ?", [channel, thread_ts], limit=1))  # fmt: skip
        return _investigation(rows[0]) if rows else None

    def between(self, start: float, end: float, *, channel: str | None = None) -> list[InvestigationRow]:
        """Investigations started in a time range: of one channel, or (None) of every channel,
        for the operator only: an investigation is shown only where it was started."""
        where, args = "created >= ? and created < ?", list[object]([start, end])
        if channel is not None:
            where, args = where + " and channel = ?", [*args, channel]
        with self._lock:
            rows = list(self._db["investigations"].rows_where(  # type: ignore[union-attr]
                where, args, order_by="created"))  # fmt: skip
        return [_investigation(r) for r in rows]

    def similar(self, *, channel: str, top_service: str, top_fault: str, before: float,
                limit: int = 3) -> list[InvestigationRow]:  # fmt: skip
        """Earlier finished investigations of the same channel that blamed the same service with
        the same fault (another channel's, a private one's say, are not this channel's to see)."""
        with self._lock:
            rows = list(self._db["investigations"].rows_where(  # type: ignore[union-attr]
                "status = 'done' and channel = ? and top_service = ? and top_fault = ? and created < ?",
                [channel, top_service, top_fault, before], order_by="created desc", limit=limit))  # fmt: skip
        return [_investigation(r) for r in rows]

    # -- what happened after ----------------------------------------------------------------
    def add_repair(self, investigation: str, *, before: float, after: float, decisive: str | None,
                   steps: Sequence[dict[str, Any]], trace: dict[str, Any], audit: dict[str, Any],
                   top_before: str, top_after: str) -> None:  # fmt: skip
        row = {"investigation": investigation, "created": time.time(), "before": before, "after": after,
               "decisive": decisive or "", "steps": json.dumps(list(steps)), "trace": json.dumps(trace),
               "audit": json.dumps(audit), "top_before": top_before, "top_after": top_after}  # fmt: skip
        with self._write():
            self._db["repairs"].insert(row)  # type: ignore[union-attr]

    def repairs(self, investigation: str) -> list[RepairRow]:
        with self._lock:
            rows = list(self._db["repairs"].rows_where("investigation = ?", [investigation], order_by="id"))  # type: ignore[union-attr]
        return [RepairRow(r["investigation"], r["before"], r["after"], r["decisive"], r["top_before"],
                          r["top_after"], r["created"], json.loads(r["trace"]), json.loads(r["audit"]),
                          tuple(json.loads(r["steps"])))
                for r in rows]  # fmt: skip

    def add_verification(self, investigation: str, run: dict[str, Any]) -> None:
        with self._write():
            self._db["verifications"].insert(  # type: ignore[union-attr]
                {"investigation": investigation, "created": time.time(), "run": json.dumps(run)})

    def verifications(self, investigation: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = list(self._db["verifications"].rows_where("investigation = ?", [investigation], order_by="id"))  # type: ignore[union-attr]
        return [json.loads(r["run"]) for r in rows]

    def add_feedback(self, investigation: str, *, user: str, correct: bool, true_cause: str = "",
                     note: str = "") -> None:  # fmt: skip
        row = {"investigation": investigation, "created": time.time(), "user": user, "correct": int(correct),
               "true_cause": true_cause, "note": note}  # fmt: skip
        with self._write():
            self._db["feedback"].insert(row)  # type: ignore[union-attr]

    def feedback(self, investigation: str) -> list[FeedbackRow]:
        with self._lock:
            rows = list(self._db["feedback"].rows_where("investigation = ?", [investigation], order_by="id"))  # type: ignore[union-attr]
        return [FeedbackRow(r["investigation"], r["user"], bool(r["correct"]), r["true_cause"], r["note"],
                            r["created"]) for r in rows]  # fmt: skip

    def repaired_among(self, ids: Sequence[str]) -> set[str]:
        """Which of these investigations have a repair."""
        with self._lock:
            return {r["investigation"] for r in self._db.query(
                f"select distinct investigation from repairs where investigation in ({_marks(ids)})", list(ids))}  # fmt: skip

    def last_feedback(self, ids: Sequence[str]) -> dict[str, bool]:
        """Per investigation among these, whether its latest feedback called it correct."""
        with self._lock:
            rows = self._db.query(f"select investigation, correct from feedback where investigation in ({_marks(ids)}) "
                                  "order by id", list(ids))  # fmt: skip
            return {r["investigation"]: bool(r["correct"]) for r in rows}

    def add_question(self, investigation: str, *, user: str, question: str, answer: str) -> None:
        row = {"investigation": investigation, "created": time.time(), "user": user, "question": question[:4000],
               "answer": answer[:8000]}  # fmt: skip
        with self._write():
            self._db["questions"].insert(row)  # type: ignore[union-attr]

    def questions(self, investigation: str) -> list[tuple[str, str]]:
        with self._lock:
            rows = list(self._db["questions"].rows_where("investigation = ?", [investigation], order_by="id"))  # type: ignore[union-attr]
        return [(r["question"], r["answer"]) for r in rows]


def _marks(ids: Sequence[str]) -> str:
    return ",".join("?" * len(ids)) or "null"


def _investigation(r: dict[str, Any]) -> InvestigationRow:
    return InvestigationRow(
        id=r["id"], service=r["service"], window_start=r["window_start"], window_end=r["window_end"],
        channel=r["channel"], user=r["user"], parent_ts=r["parent_ts"] or "", thread_ts=r["thread_ts"] or "",
        status=r["status"], engine=r["engine"], created=r["created"], finished=r["finished"],
        top_service=r["top_service"] or "", top_fault=r["top_fault"] or "", confidence=r["confidence"],
        score=r["score"], route=r["route"] or "", blamed=r["blamed"] or "",
        trace=json.loads(r["trace"]) if r["trace"] else None, audit=json.loads(r["audit"]) if r["audit"] else None,
        error=r["error"] or "", missing=tuple(json.loads(r["missing"] or "[]")),
    )  # fmt: skip
