"""What engineers do in an investigation's thread: its buttons (repair, verify, mark right or
wrong) and the questions they ask. Each is told in the thread, failures included."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot import blockkit, render, replies
from bot.changes import Changes, asks_what_changed
from bot.desk import Desk
from bot.runbooks import NONE, Runbook, Runbooks, asked_fields
from bot.slackcalls import Poster, call
from bot.stream import ThreadStream
from bot.verdicts import Verdict
from handlers.requests import USAGE
from rca.errors import InputError, RcaError
from rca.explain import is_question
from rca.star.repair import RepairStep
from rca.telemetry import Window
from storage.database import StorageError
from storage.rows import InvestigationRow

log = logging.getLogger("rcabot.slack")


def failure(exc: BaseException) -> tuple[str, str]:
    """What failed, in plain words, and what the user can do about it."""
    if isinstance(exc, StorageError):
        return (
            "storage unavailable, so the verdict could not be recorded",
            "Run the command again once the database is back.",
        )
    if isinstance(exc, RcaError | OSError | ValueError):
        return (
            blockkit.plain(str(exc))[:500] or type(exc).__name__,
            "Check the window and the service name, or try again; `/rca help` shows the usage.",
        )
    return (
        f"an internal error ({type(exc).__name__})",
        "It is in rcabot's log; try again, and report it if it repeats.",
    )


def runbook_for(runbooks: Runbooks, verdict: Verdict) -> Runbook | None:
    """The team's runbook for the verdict's first suspect, where it has one."""
    ranking = verdict.trace.decision.ranking
    return runbooks.of(ranking[0][0]) if ranking else None


class ThreadActions:
    def __init__(
        self,
        desk: Desk,
        client: AsyncWebClient,
        zone: Callable[[str], Awaitable[str]],
        *,
        stream_interval: float = 1.0,
        thread_questions: int = 20,
        runbooks: Runbooks = NONE,
        changes: Changes | None = None,
    ) -> None:
        self.desk = desk
        self.client = client
        self.poster = Poster(client)
        self.zone = zone  # a user's time zone (bot.people.People.zone)
        self.stream_interval = stream_interval
        self.thread_questions = thread_questions
        self.runbooks = runbooks
        self.changes = changes  # what "what changed?" is answered from

    async def repair(self, investigation: str, *, channel: str, user: str, team: str) -> None:
        row = await self.owned(investigation, channel)
        if row is None:
            return
        stream = ThreadStream(
            self.client,
            channel=channel,
            thread_ts=row.thread_ts,
            team_id=team,
            user_id=user,
            interval=self.stream_interval,
        )
        await stream.add(f"🛠 <@{user}> asked for a repair: auditing the four stages and replaying patches…")
        loop = asyncio.get_running_loop()
        pending: list[asyncio.Task[None]] = []

        def shown(s: RepairStep) -> None:
            mark = "kept" if s.committed else "not kept"
            pending.append(
                loop.create_task(
                    stream.add(
                        f"    ↳ round {s.round} {s.route}: {s.stage.replace('_', ' ')} ← `{s.patch}` "
                        f"S {s.before:.2f} → {s.after:.2f} ({mark})"
                    )
                )
            )

        try:
            before, after, result = await self.desk.followups.repair(investigation, progress=shown)
        except Exception as exc:  # the edge of the button: the thread is told and the stream closed
            what, todo = failure(exc)
            if not isinstance(exc, RcaError | StorageError):
                log.exception("repair of %s failed unexpectedly", investigation)
            await asyncio.gather(*pending, return_exceptions=True)
            await stream.close(f"❌ Repair failed: {what}. {todo}")
            return
        await asyncio.gather(*pending)
        await stream.close()
        if not any(s.committed for s in result.steps) and replies.same_verdict(before.trace, after.trace):
            said = (
                f"🛠 Repair changed nothing: the four stages were re-checked (S {result.before.score:.2f}) and "
                "no patch improved them; the verdict above stands."
            )
            await self.poster.post(channel, row.thread_ts, said, [blockkit.context(said)])
            return
        text, blocks = replies.repair(before, result)
        await self.poster.post(channel, row.thread_ts, text, blocks)
        text, blocks = render.verdict(
            after, repaired=True, runbook=runbook_for(self.runbooks, after), tz=await self.zone(user)
        )
        await self.poster.post(channel, row.thread_ts, text, blocks)

    async def verify(self, investigation: str, *, channel: str, user: str) -> None:
        row = await self.owned(investigation, channel)
        if row is None:
            return
        try:
            run = await self.desk.followups.verify(investigation)
        except RcaError as exc:
            await self.poster.post(
                channel,
                row.thread_ts,
                f"Verification failed: {exc}",
                [blockkit.section(f"❌ Verification failed: {blockkit.plain(str(exc))[:500]}")],
            )
            return
        text, blocks = replies.verification(run)
        await self.poster.post(channel, row.thread_ts, text, blocks)

    async def mark(self, investigation: str, *, channel: str, user: str, correct: bool, trigger_id: str) -> None:
        row = await self.owned(investigation, channel)
        if row is None:
            return
        if not correct:
            candidates = [r["service"] for r in (row.trace or {}).get("decision_report", {}).get("ranking", [])]
            await call(
                self.client.views_open(trigger_id=trigger_id, view=replies.feedback_view(investigation, candidates))
            )
            return
        await self.desk.followups.feedback(investigation, user=user, correct=True)
        await self.poster.post(
            channel, row.thread_ts, "marked correct", [blockkit.context(f"✓ <@{user}> marked this verdict correct")]
        )
        await call(self.client.chat_postEphemeral(channel=channel, user=user, text=replies.feedback_thanks(True, "")))

    async def wrong_cause(self, investigation: str, *, user: str, true_cause: str, note: str) -> str | None:
        row = await asyncio.to_thread(self.desk.store.investigation, investigation)
        if row is None:
            return "This investigation is no longer known."
        try:
            await self.desk.followups.feedback(
                investigation, user=user, correct=False, true_cause=true_cause, note=note
            )
        except InputError as exc:
            return str(exc)
        return None

    async def announce_wrong(self, investigation: str, *, user: str, true_cause: str) -> None:
        row = await asyncio.to_thread(self.desk.store.investigation, investigation)
        if row is None:
            return
        cause = f"; true cause: *{blockkit.plain(true_cause)}*" if true_cause else ""
        await self.poster.post(
            row.channel,
            row.thread_ts,
            "marked wrong",
            [blockkit.context(f"✗ <@{user}> marked this verdict wrong{cause}")],
        )

    async def follow_up(self, *, channel: str, thread_ts: str, user: str, text: str, addressed: bool) -> None:
        row = await self.desk.thread_investigation(channel, thread_ts)
        if row is None:
            if thread_ts and addressed:  # a mention outside an investigation thread: say what rcabot does
                await self.poster.post(channel, thread_ts, "how to use rcabot", [blockkit.section(USAGE)])
            return
        if not addressed and not is_question(text):
            return  # engineers talking among themselves in the thread
        asked = len(await asyncio.to_thread(self.desk.store.questions, row.id))
        if asked >= self.thread_questions:
            if asked == self.thread_questions:  # said once, then silence
                await asyncio.to_thread(
                    self.desk.store.add_question,
                    row.id,
                    user=user,
                    question=text,
                    answer="(the thread's question budget was spent)",
                )
                await self.poster.post(
                    channel,
                    thread_ts,
                    "question budget spent",
                    [
                        blockkit.context(
                            f"This thread has had its {self.thread_questions} answers; start a new `/rca` for more."
                        )
                    ],
                )
            return
        if row.status == "running":
            await self.poster.post(
                channel,
                thread_ts,
                "still running",
                [blockkit.context("The investigation is still running; ask again once the verdict is posted.")],
            )
            return
        if self.changes is not None and asks_what_changed(text):  # the recorded changes: no model needed
            window = Window(row.window_start, row.window_end)
            said = await self.changes.listing_for("", window, tz=await self.zone(user))
            await asyncio.to_thread(self.desk.store.add_question, row.id, user=user, question=text, answer=said)
            await self.poster.post(channel, thread_ts, said[:300], [blockkit.section(said)])
            return
        if (fields := asked_fields(text)) and row.top_service:  # the team's own answer: no model needed
            named = [s for s in (row.top_service, row.service) if s and s.lower() in text.lower()]
            service = named[0] if named else row.top_service
            said = render.runbook_answer(service, self.runbooks.of(service), fields)
            await asyncio.to_thread(self.desk.store.add_question, row.id, user=user, question=text, answer=said)
            await self.poster.post(channel, thread_ts, said[:300], [blockkit.section(said)])
            return
        try:
            reply, chart = await self.desk.followups.ask(row.id, text, user=user)
        except RcaError as exc:
            await self.poster.post(channel, thread_ts, str(exc), [blockkit.section(blockkit.plain(str(exc)))])
            return
        await self.poster.post(
            channel, thread_ts, reply.text[:300], [blockkit.section(replies.plain_answer(reply.text))]
        )
        await self.poster.chart(channel, thread_ts, chart, reply.text)

    async def owned(self, investigation: str, channel: str) -> InvestigationRow | None:
        """The investigation a click names, if it belongs to the channel the click came from."""
        row = await asyncio.to_thread(self.desk.store.investigation, investigation) if investigation else None
        if row is None or row.channel != channel or not row.thread_ts:
            log.warning("ignored an action on %r from channel %r", investigation[:40], channel[:40])
            return None
        return row
