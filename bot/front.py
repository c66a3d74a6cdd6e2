"""rcabot in Slack: the parent message, the live thread, the verdict and what follows it.

Every failure past the acknowledgement is told in the thread in plain words (fail soft, never
silently); the listeners in `handlers/` only acknowledge, parse and call this front.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blockkit, render, replies, scheduler
from bot.desk import Desk
from bot.narration import Narrator
from bot.runbooks import NONE, Runbook, Runbooks, asked_fields
from bot.stream import ThreadStream
from bot.verdicts import ALERTMANAGER, AlreadyRunning, Chart, Run, Verdict
from handlers.front import Respond, reply
from handlers.requests import USAGE, RcaCommand
from rca.errors import InputError, RcaError
from rca.explain import is_question
from rca.search.events import Finished
from rca.star.repair import RepairStep
from storage.alerts import AlertStore
from storage.database import StorageError
from storage.investigations import InvestigationRow
from storage.schedules import SummarySchedule

log = logging.getLogger("rcabot.slack")
STORAGE_DOWN = ("⚠️ Storage unavailable: rcabot cannot record an investigation right now, so none was "
                "started. Nothing is queued; run the command again once the database is back.")  # fmt: skip
DAY = 86400.0


def failure(exc: BaseException) -> tuple[str, str]:
    """What failed, in plain words, and what the user can do about it."""
    if isinstance(exc, StorageError):
        return ("storage unavailable, so the verdict could not be recorded",
                "Run the command again once the database is back.")  # fmt: skip
    if isinstance(exc, RcaError | OSError | ValueError):
        return (blockkit.plain(str(exc))[:500] or type(exc).__name__,
                "Check the window and the service name, or try again; `/rca help` shows the usage.")  # fmt: skip
    return (f"an internal error ({type(exc).__name__})",
            "It is in rcabot's log; try again, and report it if it repeats.")  # fmt: skip


class SlackFront:
    def __init__(self, desk: Desk, client: AsyncWebClient, *, stream_interval: float = 1.0,
                 allowed_channels: frozenset[str] = frozenset(), allowed_users: frozenset[str] = frozenset(),
                 thread_questions: int = 20, schedule: SummarySchedule | None = None, runbooks: Runbooks = NONE,
                 alerts: AlertStore | None = None, clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.desk = desk
        self.runbooks = runbooks
        self._alert_runs: set[asyncio.Task[None]] = set()
        self.alerts = alerts  # where alerts no route took are counted, for /rca status
        self.schedule = schedule
        self.thread_questions = thread_questions
        self.client = client
        self.stream_interval = stream_interval
        self.allowed_channels = allowed_channels
        self.allowed_users = allowed_users
        self.clock = clock
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # user-group id -> (read at, members)
        self._zones: dict[str, str] = {}  # user id -> the time zone Slack says they read in

    async def may_act(self, *, user: str, channel: str) -> bool:
        if self.allowed_channels and channel not in self.allowed_channels:
            return False
        if not self.allowed_users or user in self.allowed_users:
            return True
        for group in (g for g in self.allowed_users if g.startswith("S")):
            if user in await self._members(group):
                return True
        return False

    async def zone(self, user: str) -> str:
        """The user's time zone as Slack's users.info gives it (IANA name), read once; UTC for
        an alert, or where Slack will not say or names a zone not known here."""
        if user == ALERTMANAGER or not user:
            return "UTC"
        if user not in self._zones:
            tz = "UTC"
            try:
                found = str(((await self.client.users_info(user=user)).get("user") or {}).get("tz") or "UTC")
                ZoneInfo(found)
                tz = found
            except (SlackApiError, ValueError, ZoneInfoNotFoundError) as exc:
                log.info("no time zone for %s: %s", user[:20], type(exc).__name__)
            self._zones[user] = tz
        return self._zones[user]

    async def _members(self, group: str) -> frozenset[str]:
        """A user group's members, read at most every five minutes (none when Slack will not say)."""
        cached = self._groups.get(group)
        if cached is not None and self.clock() - cached[0] < 300:
            return cached[1]
        try:
            users = frozenset((await self.client.usergroups_users_list(usergroup=group)).get("users") or [])
        except SlackApiError as exc:
            log.warning("cannot read user group %s: %s", group, exc.response.get("error", exc))
            users = frozenset()
        self._groups[group] = (self.clock(), users)
        return users

    async def status_text(self, channel: str) -> str:
        text = replies.status(self.desk.running(channel), queued=self.desk.queued_ahead())
        try:
            return text + await asyncio.to_thread(self._recorded_status, channel)
        except StorageError as exc:
            log.warning("status without the database: %s", exc)
            return text + "\n⚠️ Storage unavailable: the summary schedule and alert counts cannot be read right now."

    def _recorded_status(self, channel: str) -> str:
        """The part of the status the database holds: the summary slot and unrouted alerts."""
        text = ""
        sub = self.schedule.subscription(channel) if self.schedule is not None else None
        if sub is not None:
            text += f"\nDaily summary here: next at {blockkit.clock(sub.next_run, sub.tz)}."
        unrouted = self.alerts.unrouted_since(self.clock() - DAY) if self.alerts is not None else 0
        if unrouted:
            text += (f"\n⚠️ {unrouted} Alertmanager notification(s) in the last day matched no route and "
                     "no default channel (RCABOT_ALERT_ROUTES).")  # fmt: skip
        return text

    # -- /rca <service> <window> -------------------------------------------------------------
    async def investigate(self, command: RcaCommand, *, channel: str, user: str, team: str,
                          respond: Respond) -> None:  # fmt: skip
        try:
            run = await self.desk.open(command.service, command.window, channel=channel, user=user)
        except AlreadyRunning as exc:
            await reply(respond, await self._already(exc))
            return
        except InputError as exc:
            await reply(respond, f"{blockkit.plain(str(exc))}\n\n{USAGE}")
            return
        except StorageError as exc:
            log.error("storage unavailable, /rca %s not started: %s", command.service[:60], exc)
            await reply(respond, STORAGE_DOWN)
            return
        text, blocks = render.parent(run, "⏳ running — follow the investigation in the thread", await self.zone(user))
        try:
            posted = await self.client.chat_postMessage(channel=channel, text=text, blocks=blocks)
        except SlackApiError as exc:
            await reply(respond, f"I cannot post in this channel ({exc.response.get('error')}); "
                        "invite me with `/invite @rcabot`.")  # fmt: skip
            await self._drain(run)
            return
        ts = str(posted["ts"])
        await self.desk.set_thread(run.id, parent_ts=ts, thread_ts=ts)
        await self._run(run, ts, team=team)

    # -- investigations an alert started -----------------------------------------------------
    async def investigate_alert(self, *, channel: str, service: str, service_label: str, headline: str, alerts: int,
                                reach: float, began_ago: float, severity: str = "",
                                links: tuple[tuple[str, str], ...] = (), thread_ts: str = "") -> tuple[str, str]:  # fmt: skip
        """Post the alert into the channel (or, fired again, into its group's thread `thread_ts`)
        and investigate it in that thread, over a window that ends now and reaches back `reach`
        seconds, the symptom having begun `began_ago` seconds ago. `links`: (label, URL) pairs
        from the alert (graph, runbook, silence). Returns the thread and the investigation (or
        "" when none ran: the alert names no known service, or one is already running here)."""
        sev = f"[{blockkit.plain(severity[:20])}] " if severity else ""
        again = "again " if thread_ts else ""
        head = f"🚨 Alert {again}{sev}: {blockkit.plain(headline[:300])}" + (f" ({alerts} alerts)" if alerts > 1 else "")
        shown = " · ".join(f"<{url}|{label}>" for label, url in links if url)
        try:
            posted = await self.client.chat_postMessage(channel=channel, text=head[:3000], thread_ts=thread_ts or None, blocks=[
                blockkit.section(f"*{head}*"), blockkit.context(f"from Alertmanager · service label `{service_label}`: "
                                                            f"`{blockkit.plain(service[:200]) or 'none'}`"
                                                            + (f" · {shown}" if shown else ""))])  # fmt: skip
        except SlackApiError as exc:
            log.warning("cannot post an alert into %s: %s", channel[:40], exc.response.get("error"))
            return "", ""
        ts = thread_ts or str(posted["ts"])
        if not service:
            await self._post(channel, ts, "no service", [blockkit.context(
                f"The alert carries no `{service_label}` label, so there is no service to investigate.")])  # fmt: skip
            return ts, ""
        now = await self.desk.telemetry.now()
        try:
            run = await self.desk.open(service, f"{max(60, round(reach))}s", channel=channel, user=ALERTMANAGER,
                                       alert_time=now - began_ago)  # fmt: skip
        except AlreadyRunning as exc:
            await self._post(channel, ts, "already running", [blockkit.context(await self._already(exc))])
            return ts, exc.run.id if exc.run is not None else ""
        except InputError as exc:
            await self._post(channel, ts, "cannot investigate", [blockkit.context(
                f"Not investigated: {blockkit.plain(str(exc))[:500]}")])  # fmt: skip
            return ts, ""
        except StorageError as exc:
            log.error("storage unavailable, alert on %s not investigated: %s", service[:60], exc)
            await self._post(channel, ts, "storage unavailable", [blockkit.context(STORAGE_DOWN)])
            return ts, ""
        await self.desk.set_thread(run.id, parent_ts=ts, thread_ts=ts)
        task = asyncio.create_task(self._run(run, ts, team="", live=False))  # no one to name as recipient
        self._alert_runs.add(task)
        task.add_done_callback(self._alert_runs.discard)
        return ts, run.id

    async def finish_alert_runs(self) -> None:
        while self._alert_runs:
            await asyncio.gather(*list(self._alert_runs), return_exceptions=True)

    async def alert_note(self, channel: str, thread_ts: str, text: str) -> None:
        await self._post(channel, thread_ts, text, [blockkit.context(text)])

    async def alerts_folded(self, channel: str, *, ts: str, names: tuple[str, ...], per_minute: int) -> str:
        """The channel's one line for alerts beyond its threads a minute, naming them: posted,
        then updated."""
        shown = ", ".join(blockkit.plain(n[:80]) for n in names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        text = (f"🔕 {len(names)} more alert group(s) grouped here: {shown}. This channel opens at most {per_minute} "
                "investigation threads a minute; `/rca <service>` investigates one by hand.")  # fmt: skip
        try:
            if ts:
                await self.client.chat_update(channel=channel, ts=ts, text=text, blocks=[blockkit.context(text)])
                return ts
            posted = await self.client.chat_postMessage(channel=channel, text=text, blocks=[blockkit.context(text)])
            return str(posted["ts"])
        except SlackApiError as exc:
            log.warning("cannot tell %s of folded alerts: %s", channel[:40], exc.response.get("error"))
            return ts

    async def _already(self, exc: AlreadyRunning) -> str:
        if exc.run is None:
            return "That investigation is starting right now; its thread appears in a moment."
        row = await asyncio.to_thread(self.desk.store.investigation, exc.run.id)
        link = ""
        if row is not None and row.thread_ts:
            try:
                link = str((await self.client.chat_getPermalink(channel=row.channel, message_ts=row.thread_ts))["permalink"])
            except SlackApiError:
                link = ""
        where = f"<{link}|its thread>" if link else "its thread"
        return f"An investigation of `{blockkit.plain(exc.run.service)}` is already running here: follow {where}."

    async def _drain(self, run: Run) -> None:
        """Run an investigation nobody can watch to its end, so its record is complete."""
        async for _ in self.desk.investigate(run):
            pass

    async def _run(self, run: Run, ts: str, *, team: str, parent_ts: str = "", live: bool = True,
                   resume: bool = False) -> None:  # fmt: skip
        stream = ThreadStream(self.client, channel=run.channel, thread_ts=ts, team_id=team, user_id=run.user,
                              interval=self.stream_interval, stream=live)  # fmt: skip
        narrator = Narrator()
        if resume:
            await stream.add("↪ The bot replica narrating this investigation stopped; this one goes on from where it was.")
        else:
            queued = self.desk.queued_ahead()
            await stream.add(f"Reading telemetry of *{blockkit.plain(run.service)}* and its neighbours"
                             + (f" (queued behind {queued} investigation(s))" if queued else "") + "…")  # fmt: skip
        finished = False
        try:
            async for event in self.desk.investigate(run, resume=resume):
                finished = finished or isinstance(event, Finished)
                for line in narrator.lines(event):
                    await stream.add(blockkit.plain(line))
        except Exception as exc:  # the edge of the run: whatever broke, the thread is told and closed
            await self._failed(run, stream, ts, parent_ts or ts, exc)
            return
        await stream.close()
        try:
            if not finished or not await self.desk.relay.take_posting(run.id):  # another replica holds the thread now
                return
            await self._post_verdict(run, ts, parent_ts or ts)
        except Exception as exc:
            await self._failed(run, None, ts, parent_ts or ts, exc, after_verdict=True)

    async def _failed(self, run: Run, stream: ThreadStream | None, thread_ts: str, parent_ts: str, exc: Exception,
                      *, after_verdict: bool = False) -> None:  # fmt: skip
        """Say in the thread what failed and what to do, close its stream, mark the parent."""
        what, todo = failure(exc)
        if isinstance(exc, RcaError | StorageError):
            log.warning("investigation %s failed", run.id, exc_info=True)
        else:
            log.exception("investigation %s failed unexpectedly", run.id)
        where = "Posting the verdict failed" if after_verdict else "The investigation failed"
        text = f"❌ {where}: {what}. {todo}"
        if stream is not None:
            await stream.close(text)
        else:
            await self._post(run.channel, thread_ts, text, [blockkit.section(text)])
        await self._update_parent(run, parent_ts, f"❌ failed: {what[:200]}")

    async def _post_verdict(self, run: Run, ts: str, parent_ts: str) -> None:
        verdict, incident = await self.desk.casebook.verdict_and_incident(run.id)  # one lookup and audit for both
        text, blocks = render.verdict(verdict, runbook=self._runbook(verdict), tz=await self.zone(run.user))
        await self._post(run.channel, ts, text, blocks)
        await self._chart(run.channel, ts, await self.desk.followups.chart_for(verdict, incident),
                          "The root cause's most anomalous signal")  # fmt: skip
        status = (f"✅ done — {blockkit.plain(render.headline(verdict))} · STAR S {verdict.audit.score:.2f}"
                  if verdict.trace.decision.ranking else "✅ done — no root cause found")  # fmt: skip
        await self._update_parent(run, parent_ts, status)

    # -- queued investigations whose narrating replica stopped ---------------------------------
    async def adopt_orphans(self) -> None:
        """With a job queue: take over the threads of investigations whose replica stopped
        renewing its lease, checked every half lease."""
        while True:
            await asyncio.sleep(self.desk.relay.lease / 2)
            try:
                for row in await self.desk.relay.orphans():
                    if row.id in {r.id for r in self.desk.running()} or not await self.desk.relay.claim(row.id):
                        continue
                    task = asyncio.create_task(self._adopt(row))
                    self._alert_runs.add(task)
                    task.add_done_callback(self._alert_runs.discard)
            except Exception:  # the edge of a background loop: the next round tries again
                log.exception("adopting orphaned investigations failed")

    async def _adopt(self, row: InvestigationRow) -> None:
        run = await self.desk.adopt(row)
        if row.status == "done":  # its verdict was stored, not posted
            if await self.desk.relay.take_posting(run.id):
                await self._post_verdict(run, row.thread_ts, row.parent_ts or row.thread_ts)
            self.desk.release(run.id)
            return
        await self._run(run, row.thread_ts, team="", parent_ts=row.parent_ts, live=False, resume=True)

    async def _update_parent(self, run: Run, ts: str, status: str) -> None:
        if run.user == ALERTMANAGER:  # the parent is the alert itself: it stays as posted, the thread tells
            return
        text, blocks = render.parent(run, status, await self.zone(run.user))
        await self._call(self.client.chat_update(channel=run.channel, ts=ts, text=text, blocks=blocks))

    # -- buttons -----------------------------------------------------------------------------
    async def repair(self, investigation: str, *, channel: str, user: str, team: str) -> None:
        row = await self._owned(investigation, channel)
        if row is None:
            return
        stream = ThreadStream(self.client, channel=channel, thread_ts=row.thread_ts, team_id=team, user_id=user,
                              interval=self.stream_interval)  # fmt: skip
        await stream.add(f"🛠 <@{user}> asked for a repair: auditing the four stages and replaying patches…")
        loop = asyncio.get_running_loop()
        pending: list[asyncio.Task[None]] = []

        def shown(s: RepairStep) -> None:
            mark = "kept" if s.committed else "not kept"
            pending.append(loop.create_task(stream.add(
                f"    ↳ round {s.round} {s.route}: {s.stage.replace('_', ' ')} ← `{s.patch}` "
                f"S {s.before:.2f} → {s.after:.2f} ({mark})")))  # fmt: skip

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
            said = (f"🛠 Repair changed nothing: the four stages were re-checked (S {result.before.score:.2f}) and "
                    "no patch improved them; the verdict above stands.")  # fmt: skip
            await self._post(channel, row.thread_ts, said, [blockkit.context(said)])
            return
        text, blocks = replies.repair(before, result)
        await self._post(channel, row.thread_ts, text, blocks)
        text, blocks = render.verdict(after, repaired=True, runbook=self._runbook(after), tz=await self.zone(user))
        await self._post(channel, row.thread_ts, text, blocks)

    async def resume(self, investigation: str, *, channel: str, user: str, team: str) -> None:
        row = await self._owned(investigation, channel)
        if row is None:
            return
        try:
            run = await self.desk.reopen(investigation, user=user)
        except InputError as exc:
            await self._post(channel, row.thread_ts, str(exc), [blockkit.section(f"Cannot resume: {blockkit.plain(str(exc))}")])
            return
        await self.desk.set_thread(run.id, parent_ts=row.parent_ts, thread_ts=row.thread_ts)
        await self._run(run, row.thread_ts, team=team, parent_ts=row.parent_ts)

    async def announce_recovered(self) -> None:
        """After a restart: a message with a resume button in each thread a stop cut short."""
        for id in self.desk.store.recovered:
            row = await asyncio.to_thread(self.desk.store.investigation, id)
            if row is not None and row.thread_ts:
                text, blocks = replies.interrupted(id)
                await self._post(row.channel, row.thread_ts, text, blocks)

    async def verify(self, investigation: str, *, channel: str, user: str) -> None:
        row = await self._owned(investigation, channel)
        if row is None:
            return
        try:
            run = await self.desk.followups.verify(investigation)
        except RcaError as exc:
            await self._post(channel, row.thread_ts, f"Verification failed: {exc}",
                             [blockkit.section(f"❌ Verification failed: {blockkit.plain(str(exc))[:500]}")])  # fmt: skip
            return
        text, blocks = replies.verification(run)
        await self._post(channel, row.thread_ts, text, blocks)

    async def mark(self, investigation: str, *, channel: str, user: str, correct: bool, trigger_id: str) -> None:
        row = await self._owned(investigation, channel)
        if row is None:
            return
        if not correct:
            candidates = [r["service"] for r in (row.trace or {}).get("decision_report", {}).get("ranking", [])]
            await self._call(self.client.views_open(trigger_id=trigger_id, view=replies.feedback_view(investigation, candidates)))
            return
        await self.desk.followups.feedback(investigation, user=user, correct=True)
        await self._post(channel, row.thread_ts, "marked correct", [blockkit.context(f"✓ <@{user}> marked this verdict correct")])
        await self._call(self.client.chat_postEphemeral(channel=channel, user=user, text=replies.feedback_thanks(True, "")))

    async def wrong_cause(self, investigation: str, *, user: str, true_cause: str, note: str) -> str | None:
        row = await asyncio.to_thread(self.desk.store.investigation, investigation)
        if row is None:
            return "This investigation is no longer known."
        try:
            await self.desk.followups.feedback(investigation, user=user, correct=False, true_cause=true_cause, note=note)
        except InputError as exc:
            return str(exc)
        return None

    async def announce_wrong(self, investigation: str, *, user: str, true_cause: str) -> None:
        row = await asyncio.to_thread(self.desk.store.investigation, investigation)
        if row is None:
            return
        cause = f"; true cause: *{blockkit.plain(true_cause)}*" if true_cause else ""
        await self._post(row.channel, row.thread_ts, "marked wrong",
                         [blockkit.context(f"✗ <@{user}> marked this verdict wrong{cause}")])  # fmt: skip

    # -- thread follow-ups -------------------------------------------------------------------
    async def follow_up(self, *, channel: str, thread_ts: str, user: str, text: str, addressed: bool) -> None:
        row = await self.desk.thread_investigation(channel, thread_ts)
        if row is None:
            if thread_ts and addressed:  # a mention outside an investigation thread: say what rcabot does
                await self._post(channel, thread_ts, "how to use rcabot", [blockkit.section(USAGE)])
            return
        if not addressed and not is_question(text):
            return  # engineers talking among themselves in the thread
        asked = len(await asyncio.to_thread(self.desk.store.questions, row.id))
        if asked >= self.thread_questions:
            if asked == self.thread_questions:  # said once, then silence
                await asyncio.to_thread(self.desk.store.add_question, row.id, user=user, question=text,
                                        answer="(the thread's question budget was spent)")  # fmt: skip
                await self._post(channel, thread_ts, "question budget spent", [blockkit.context(
                    f"This thread has had its {self.thread_questions} answers; start a new `/rca` for more.")])  # fmt: skip
            return
        if row.status == "running":
            await self._post(channel, thread_ts, "still running", [blockkit.context(
                "The investigation is still running; ask again once the verdict is posted.")])  # fmt: skip
            return
        if (fields := asked_fields(text)) and row.top_service:  # the team's own answer: no model needed
            named = [s for s in (row.top_service, row.service) if s and s.lower() in text.lower()]
            service = named[0] if named else row.top_service
            said = render.runbook_answer(service, self.runbooks.of(service), fields)
            await asyncio.to_thread(self.desk.store.add_question, row.id, user=user, question=text, answer=said)
            await self._post(channel, thread_ts, said[:300], [blockkit.section(said)])
            return
        try:
            reply, chart = await self.desk.followups.ask(row.id, text, user=user)
        except RcaError as exc:
            await self._post(channel, thread_ts, str(exc), [blockkit.section(blockkit.plain(str(exc)))])
            return
        await self._post(channel, thread_ts, reply.text[:300], [blockkit.section(replies.plain_answer(reply.text))])
        await self._chart(channel, thread_ts, chart, reply.text)

    # -- the summary -------------------------------------------------------------------------
    async def post_summary(self, channel: str) -> None:
        """The last day's investigations of this channel, posted into it (no other channel's),
        timed in the zone its daily summary was set in (UTC without one)."""
        end = self.clock()
        try:
            sub = await asyncio.to_thread(self.schedule.subscription, channel) if self.schedule is not None else None
        except StorageError:
            sub = None
        text, blocks = replies.summary(await self.desk.summary(start=end - DAY, end=end, channel=channel),
                                      tz=sub.tz if sub is not None else "UTC")  # fmt: skip
        await self._call(self.client.chat_postMessage(channel=channel, text=text, blocks=blocks))

    async def schedule_summary(self, *, channel: str, user: str, at: str | None, tz: str) -> str:
        if self.schedule is None:
            return "This rcabot keeps no schedule; ask the team that runs it."
        if at is None:
            gone = await asyncio.to_thread(self.schedule.unsubscribe, channel)
            return "The daily summary here is stopped." if gone else "This channel has no daily summary to stop."
        try:
            cron = scheduler.daily(at, tz)
        except InputError as exc:
            return blockkit.plain(str(exc))
        sub = await asyncio.to_thread(self.schedule.subscribe, channel, cron=cron, tz=tz, user=user,
                                      now=self.clock())  # fmt: skip
        when = blockkit.clock(sub.next_run, sub.tz)
        await self._call(self.client.chat_postMessage(channel=channel, text=f"daily RCA summary at {at} {tz}", blocks=[
            blockkit.context(f"<@{user}> asked for this channel's RCA summary every day at {at} {tz}; "
                           f"the first is {when}. `/rca summary off` stops it.")]))  # fmt: skip
        return f"Done: this channel's summary every day at {at} {tz}, first {when}."

    async def run_summaries(self) -> None:
        """Post each subscribed channel's summary at its slot (see `bot.scheduler`), forever."""
        if self.schedule is not None:
            await scheduler.run_summaries(self.schedule, self.post_summary, clock=self.clock)

    # -- plumbing ----------------------------------------------------------------------------
    def _runbook(self, verdict: Verdict) -> Runbook | None:
        ranking = verdict.trace.decision.ranking
        return self.runbooks.of(ranking[0][0]) if ranking else None

    async def _owned(self, investigation: str, channel: str) -> InvestigationRow | None:
        """The investigation a click names, if it belongs to the channel the click came from."""
        row = await asyncio.to_thread(self.desk.store.investigation, investigation) if investigation else None
        if row is None or row.channel != channel or not row.thread_ts:
            log.warning("ignored an action on %r from channel %r", investigation[:40], channel[:40])
            return None
        return row

    async def _post(self, channel: str, thread_ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        await self._call(self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text[:3000],
                                                      blocks=blocks))  # fmt: skip

    async def _chart(self, channel: str, thread_ts: str, chart: Chart | None, comment: str) -> None:
        if chart is None:
            return
        await self._call(self.client.files_upload_v2(
            channel=channel, thread_ts=thread_ts, content=chart.png, filename="rcabot-chart.png",
            title=chart.title, initial_comment=blockkit.plain(comment[:200])))  # fmt: skip

    @staticmethod
    async def _call(call: Awaitable[Any]) -> None:
        """A Web API call whose failure is logged, not raised: the rest of the reply goes on."""
        try:
            await call
        except SlackApiError as exc:
            log.warning("Slack call failed: %s", exc.response.get("error", exc))
