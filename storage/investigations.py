"""The bot's record (a SQLite file, or PostgreSQL: storage.database): investigations with their
traces and audits, repairs, verification runs, feedback, follow-up questions, and the Slack
deliveries seen.

Every write is one transaction, so a crash leaves either the whole row or none of it; an
investigation still marked running when the process starts again is marked interrupted.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage.database import Conflict, Migration, open_database
from storage.rows import FeedbackRow, InvestigationRow, RepairRow, investigation_row

MIGRATIONS = (
    Migration(
        1,
        (
            "create table if not exists investigations (id {text} primary key, service {text}, window_start {float}, "
            'window_end {float}, channel {text}, "user" {text}, parent_ts {text}, thread_ts {text}, status {text}, '
            "engine {text}, created {float}, finished {float}, top_service {text}, top_fault {text}, confidence {float}, "
            "score {float}, route {text}, blamed {text}, trace {text}, audit {text}, error {text}, missing {text})",
            "create table if not exists repairs (id {serial}, investigation {text}, created {float}, before {float}, "
            "after {float}, decisive {text}, steps {text}, trace {text}, audit {text}, top_before {text}, top_after {text})",
            "create table if not exists verifications (id {serial}, investigation {text}, created {float}, run {text})",
            'create table if not exists feedback (id {serial}, investigation {text}, created {float}, "user" {text}, '
            "correct {int}, true_cause {text}, note {text})",
            'create table if not exists questions (id {serial}, investigation {text}, created {float}, "user" {text}, '
            "question {text}, answer {text})",
            "create table if not exists seen_deliveries (key {text} primary key, seen {float})",
            "create index if not exists idx_investigations_channel_thread_ts on investigations (channel, thread_ts)",
            "create index if not exists idx_investigations_created on investigations (created)",
            "create index if not exists idx_repairs_investigation on repairs (investigation)",
            "create index if not exists idx_feedback_investigation on feedback (investigation)",
        ),
    ),
    # which bot replica narrates a queued investigation into its thread, until when, how far it
    # got in the run's progress stream, and whether the verdict was posted (bot.relay)
    Migration(
        2,
        (
            "alter table investigations add column relay_owner {text}",
            "alter table investigations add column relay_until {float}",
            "alter table investigations add column relayed {text}",
            "alter table investigations add column posted {int}",
        ),
    ),
    # the audit's trust in each verdict, as a number: where a new verdict stands among them
    Migration(3, ("alter table investigations add column trust {float}",)),
    # what the calibration reads of each verdict (rca.calibration.Features), so a system's marked
    # verdicts teach the probability the next one shows without re-reading their traces
    Migration(4, ("alter table investigations add column calibration {text}",)),
)


class Store:
    """The bot's record; safe to share between the event loop and worker threads, and (on
    PostgreSQL, or one SQLite file on one host) between processes."""

    def __init__(self, target: Path | str, *, recover: bool = True) -> None:
        """`recover`: this process ran every investigation still marked running (one process,
        investigations in it), so those a stop cut short are marked interrupted. A replica
        whose investigations run on job-queue workers passes False: they are the workers'."""
        self._db = open_database(target)
        self._db.migrate("investigations", MIGRATIONS)
        self.recovered: tuple[str, ...] = ()  # cut short by the last stop: offered for resuming
        if not recover:
            return
        with self._db.transaction():
            running = [r["id"] for r in self._db.query("select id from investigations where status = 'running'")]
            self._db.execute(
                "update investigations set status = 'interrupted', error = "
                "'the bot stopped before this investigation finished' where status = 'running'"
            )
        self.recovered = tuple(running)

    def close(self) -> None:
        self._db.close()

    # -- deliveries --------------------------------------------------------------------------
    def first_delivery(self, key: str) -> bool:
        """True the first time a Slack delivery key is seen, False for every retry of it."""
        try:
            self._db.insert("seen_deliveries", {"key": key, "seen": time.time()})
        except Conflict:
            return False
        return True

    # -- investigations ----------------------------------------------------------------------
    def start(
        self, *, id: str, service: str, window: tuple[float, float], channel: str, user: str, engine: str
    ) -> None:
        row = {
            "id": id,
            "service": service,
            "window_start": window[0],
            "window_end": window[1],
            "channel": channel,
            "user": user,
            "parent_ts": "",
            "thread_ts": "",
            "status": "running",
            "engine": engine,
            "created": time.time(),
            "error": "",
            "missing": "[]",
        }
        self._db.insert("investigations", row)

    def set_thread(self, id: str, *, parent_ts: str, thread_ts: str) -> None:
        self._update(id, parent_ts=parent_ts, thread_ts=thread_ts)

    def finish(
        self, id: str, *, trace: dict[str, Any], audit: dict[str, Any], calibration: dict[str, Any] | None = None
    ) -> None:
        """The investigation done: its trace, audit and what the calibration reads of it."""
        ranking = trace["decision_report"]["ranking"]
        top = ranking[0] if ranking else {}
        self._update(
            id,
            status="done",
            finished=time.time(),
            trace=json.dumps(trace),
            audit=json.dumps(audit),
            calibration=json.dumps(calibration) if calibration is not None else None,
            top_service=top.get("service", ""),
            top_fault=top.get("fault_type", ""),
            confidence=top.get("confidence"),
            score=audit["score"],
            trust=audit.get("trust"),
            route=audit["route"],
            blamed=audit.get("blamed_stage") or "",
            missing=json.dumps(trace["evidence_package"]["missing"]),
        )

    def fail(self, id: str, error: str) -> None:
        self._update(id, status="failed", finished=time.time(), error=error[:2000])

    def _update(self, id: str, **values: Any) -> None:
        sets = ", ".join(f'"{k}" = ?' for k in values)
        self._db.execute(f"update investigations set {sets} where id = ?", [*values.values(), id])

    def investigation(self, id: str) -> InvestigationRow | None:
        rows = self._db.query("select * from investigations where id = ?", [id])
        return investigation_row(rows[0]) if rows else None

    def by_thread(self, channel: str, thread_ts: str) -> InvestigationRow | None:
        """The investigation whose Slack thread this is."""
        rows = self._db.query(
            "select * from investigations where channel = ? and thread_ts = ? limit 1", [channel, thread_ts]
        )
        return investigation_row(rows[0]) if rows else None

    def between(self, start: float, end: float, *, channel: str | None = None) -> list[InvestigationRow]:
        """Investigations started in a time range: of one channel, or (None) of every channel,
        for the operator only: an investigation is shown only where it was started."""
        where, args = "created >= ? and created < ?", list[object]([start, end])
        if channel is not None:
            where, args = where + " and channel = ?", [*args, channel]
        rows = self._db.query(f"select * from investigations where {where} order by created", args)
        return [investigation_row(r) for r in rows]

    def similar(
        self, *, channel: str, top_service: str, top_fault: str, before: float, limit: int = 3
    ) -> list[InvestigationRow]:
        """Earlier finished investigations of the same channel that blamed the same service with
        the same fault (another channel's, a private one's say, are not this channel's to see)."""
        rows = self._db.query(
            "select * from investigations where status = 'done' and channel = ? and top_service = ? "
            "and top_fault = ? and created < ? order by created desc limit ?",
            [channel, top_service, top_fault, before, limit],
        )
        return [investigation_row(r) for r in rows]

    def trusts(self, *, before: float, limit: int = 200) -> list[float]:
        """How far the audit trusted each of the last `limit` verdicts given before `before`,
        in any channel (a trust value names nothing): where a new verdict stands among them."""
        rows = self._db.query(
            "select trust from investigations where status = 'done' and trust is not null and created < ? "
            "order by created desc limit ?",
            [before, limit],
        )
        return [float(r["trust"]) for r in rows if math.isfinite(r["trust"])]

    def marks(self, *, before: float, limit: int = 200) -> list[tuple[dict[str, Any], bool]]:
        """What the calibration read of each of the last `limit` marked verdicts given before
        `before`, in any channel, with its latest mark (right?): what this system's engineers
        said of the bot's first places."""
        rows = self._db.query(
            "select id, calibration from investigations i where status = 'done' and calibration is not null "
            "and created < ? and exists (select 1 from feedback f where f.investigation = i.id) "
            "order by created desc limit ?",
            [before, limit],
        )
        last = self.last_feedback([r["id"] for r in rows]) if rows else {}
        return [(json.loads(r["calibration"]), last[r["id"]]) for r in rows if r["id"] in last]

    # -- relaying a queued investigation (several replicas) --------------------------------------
    def lease(self, id: str, *, owner: str, until: float, now: float) -> bool:
        """Take (or keep) the narration of an investigation's thread until `until`: True when it
        is free, lapsed, or already this owner's; one replica wins a race for it."""
        return (
            self._db.execute(
                "update investigations set relay_owner = ?, relay_until = ? where id = ? and "
                "(relay_owner = ? or relay_owner is null or relay_until is null or relay_until < ?)",
                [owner, until, id, owner, now],
            )
            == 1
        )

    def relayed(self, id: str, entry: str) -> None:
        """How far in the run's progress stream its thread has been told."""
        self._db.execute("update investigations set relayed = ? where id = ?", [entry, id])

    def relay_position(self, id: str) -> str:
        rows = self._db.query("select relayed from investigations where id = ?", [id])
        return str(rows[0]["relayed"] or "") if rows else ""

    def take_posting(self, id: str) -> bool:
        """True once per investigation: the replica that gets it posts the verdict."""
        return self._db.execute("update investigations set posted = 1 where id = ? and posted is null", [id]) == 1

    def orphans(self, now: float) -> list[InvestigationRow]:
        """Queued investigations with a thread whose narrator's lease lapsed before the verdict was posted."""
        rows = self._db.query(
            "select * from investigations where status in ('running', 'done') and posted is null "
            "and thread_ts != '' and relay_until is not null and relay_until < ? order by created",
            [now],
        )
        return [investigation_row(r) for r in rows]

    # -- what happened after ----------------------------------------------------------------
    def add_repair(
        self,
        investigation: str,
        *,
        before: float,
        after: float,
        decisive: str | None,
        steps: Sequence[dict[str, Any]],
        trace: dict[str, Any],
        audit: dict[str, Any],
        top_before: str,
        top_after: str,
    ) -> None:
        row = {
            "investigation": investigation,
            "created": time.time(),
            "before": before,
            "after": after,
            "decisive": decisive or "",
            "steps": json.dumps(list(steps)),
            "trace": json.dumps(trace),
            "audit": json.dumps(audit),
            "top_before": top_before,
            "top_after": top_after,
        }
        self._db.insert("repairs", row)

    def repairs(self, investigation: str) -> list[RepairRow]:
        rows = self._db.query("select * from repairs where investigation = ? order by id", [investigation])
        return [
            RepairRow(
                r["investigation"],
                r["before"],
                r["after"],
                r["decisive"],
                r["top_before"],
                r["top_after"],
                r["created"],
                json.loads(r["trace"]),
                json.loads(r["audit"]),
                tuple(json.loads(r["steps"])),
            )
            for r in rows
        ]

    def add_verification(self, investigation: str, run: dict[str, Any]) -> None:
        self._db.insert(
            "verifications", {"investigation": investigation, "created": time.time(), "run": json.dumps(run)}
        )

    def verifications(self, investigation: str) -> list[dict[str, Any]]:
        rows = self._db.query("select run from verifications where investigation = ? order by id", [investigation])
        return [json.loads(r["run"]) for r in rows]

    def add_feedback(
        self, investigation: str, *, user: str, correct: bool, true_cause: str = "", note: str = ""
    ) -> None:
        row = {
            "investigation": investigation,
            "created": time.time(),
            "user": user,
            "correct": int(correct),
            "true_cause": true_cause,
            "note": note,
        }
        self._db.insert("feedback", row)

    def feedback(self, investigation: str) -> list[FeedbackRow]:
        rows = self._db.query("select * from feedback where investigation = ? order by id", [investigation])
        return [
            FeedbackRow(r["investigation"], r["user"], bool(r["correct"]), r["true_cause"], r["note"], r["created"])
            for r in rows
        ]

    def repaired_among(self, ids: Sequence[str]) -> set[str]:
        """Which of these investigations have a repair."""
        rows = self._db.query(
            f"select distinct investigation from repairs where investigation in ({_marks(ids)})", list(ids)
        )
        return {r["investigation"] for r in rows}

    def last_feedback(self, ids: Sequence[str]) -> dict[str, bool]:
        """Per investigation among these, whether its latest feedback called it correct."""
        rows = self._db.query(
            f"select investigation, correct from feedback where investigation in ({_marks(ids)}) order by id", list(ids)
        )
        return {r["investigation"]: bool(r["correct"]) for r in rows}

    def add_question(self, investigation: str, *, user: str, question: str, answer: str) -> None:
        row = {
            "investigation": investigation,
            "created": time.time(),
            "user": user,
            "question": question[:4000],
            "answer": answer[:8000],
        }
        self._db.insert("questions", row)

    def questions(self, investigation: str) -> list[tuple[str, str]]:
        rows = self._db.query(
            "select question, answer from questions where investigation = ? order by id", [investigation]
        )
        return [(r["question"], r["answer"]) for r in rows]


def _marks(ids: Sequence[str]) -> str:
    return ",".join("?" * len(ids)) or "null"
