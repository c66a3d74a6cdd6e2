"""rcabot in Slack: the parent message, the live thread and the verdict; what engineers do in
the thread (bot.actions), who may act (bot.people) and the daily summary (bot.summaries) are
rooms of their own, which this front joins into the one face the listeners call.

Every failure past the acknowledgement is told in the thread in plain words (fail soft, never
silently); the listeners in `handlers/` only acknowledge, parse and call this front.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blockkit, render, replies
from bot.actions import ThreadActions, failure, runbook_for
from bot.changes import Changes
from bot.desk import Desk
from bot.narration import Narrator
from bot.people import People
from bot.runbooks import NONE, Runbooks
from bot.slackcalls import Poster, call
from bot.stream import ThreadStream
from bot.summaries import DAY, Summaries
from bot.verdicts import ALERTMANAGER, AlreadyRunning, Run
from handlers.front import Respond, reply
from handlers.requests import USAGE, RcaCommand
from rca.errors import InputError, RcaError
from rca.search.events import Finished
from storage.alerts import AlertStore
from storage.database import StorageError
from storage.rows import InvestigationRow
from storage.schedules import SummarySchedule

log = logging.getLogger("rcabot.slack")
STORAGE_DOWN = (
    "⚠️ Storage unavailable: rcabot cannot record an investigation right now, so none was "
    "started. Nothing is queued; run the command again once the database is back."
)


class SlackFront:
    def __init__(
        self,
        desk: Desk,
        client: AsyncWebClient,
        *,
        stream_interval: float = 1.0,
        allowed_channels: frozenset[str] = frozenset(),
        allowed_users: frozenset[str] = frozenset(),
        thread_questions: int = 20,
        schedule: SummarySchedule | None = None,
        runbooks: Runbooks = NONE,
        alerts: AlertStore | None = None,
        changes: Changes | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.desk = desk
        self.client = client
        self.poster = Poster(client)
        self.people = People(client, allowed_channels=allowed_channels, allowed_users=allowed_users, clock=clock)
        self.actions = ThreadActions(
            desk,
            client,
            self.people.zone,
            stream_interval=stream_interval,
            thread_questions=thread_questions,
            runbooks=runbooks,
            changes=changes,
        )
        self.summaries = Summaries(desk, client, schedule, clock=clock)
        self.runbooks = runbooks
        self.alerts = alerts  # where alerts no route took are counted, for /rca status
        self.changes = changes  # the change feed /rca changes lists
        self.stream_interval = stream_interval
        self.clock = clock
        self._alert_runs: set[asyncio.Task[None]] = set()
        # the listeners' face (handlers.front.Front): the rooms' own methods
        self.may_act = self.people.may_act
        self.repair = self.actions.repair
        self.verify = self.actions.verify
        self.mark = self.actions.mark
        self.wrong_cause = self.actions.wrong_cause
        self.announce_wrong = self.actions.announce_wrong
        self.follow_up = self.actions.follow_up
        self.post_summary = self.summaries.post
        self.schedule_summary = self.summaries.subscribe
        self.run_summaries = self.summaries.run

    async def changes_text(self, service: str, window: str, *, user: str) -> str:
        if self.changes is None:
            return "This rcabot keeps no record of changes."
        try:
            return await self.changes.listing(service, window, tz=await self.people.zone(user))
        except InputError as exc:
            return f"{blockkit.plain(str(exc))}\n\n{USAGE}"

    async def status_text(self, channel: str) -> str:
        text = replies.status(self.desk.running(channel), queued=self.desk.queued_ahead())
        try:
            return text + await asyncio.to_thread(self._recorded_status, channel)
        except StorageError as exc:
            log.warning("status without the database: %s", exc)
            return text + "\n⚠️ Storage unavailable: the summary schedule and alert counts cannot be read right now."

    def _recorded_status(self, channel: str) -> str:
        """The part of the status the database holds: the summary slot and unrouted alerts."""
        text = self.summaries.next_slot(channel)
        unrouted = self.alerts.unrouted_since(self.clock() - DAY) if self.alerts is not None else 0
        if unrouted:
            text += (
                f"\n⚠️ {unrouted} Alertmanager notification(s) in the last day matched no route and "
                "no default channel (RCABOT_ALERT_ROUTES)."
            )
        return text

    # -- /rca <service> <window> -------------------------------------------------------------
    async def investigate(self, command: RcaCommand, *, channel: str, user: str, team: str, respond: Respond) -> None:
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
        text, blocks = render.parent(
            run, "⏳ running — follow the investigation in the thread", await self.people.zone(user)
        )
        try:
            posted = await self.client.chat_postMessage(channel=channel, text=text, blocks=blocks)
        except SlackApiError as exc:
            await reply(
                respond,
                f"I cannot post in this channel ({exc.response.get('error')}); invite me with `/invite @rcabot`.",
            )
            await self._drain(run)
            return
        ts = str(posted["ts"])
        await self.desk.set_thread(run.id, parent_ts=ts, thread_ts=ts)
        await self._run(run, ts, team=team)

    # -- investigations an alert started -----------------------------------------------------
    async def investigate_alert(
        self,
        *,
        channel: str,
        service: str,
        service_label: str,
        headline: str,
        alerts: int,
        reach: float,
        began_ago: float,
        severity: str = "",
        links: tuple[tuple[str, str], ...] = (),
        thread_ts: str = "",
    ) -> tuple[str, str]:
        """Post the alert into the channel (or, fired again, into its group's thread `thread_ts`)
        and investigate it in that thread, over a window that ends now and reaches back `reach`
        seconds, the symptom having begun `began_ago` seconds ago. `links`: (label, URL) pairs
        from the alert (graph, runbook, silence). Returns the thread and the investigation (or
        "" when none ran: the alert names no known service, or one is already running here)."""
        sev = f"[{blockkit.plain(severity[:20])}] " if severity else ""
        again = "again " if thread_ts else ""
        head = f"🚨 Alert {again}{sev}: {blockkit.plain(headline[:300])}" + (
            f" ({alerts} alerts)" if alerts > 1 else ""
        )
        shown = " · ".join(f"<{url}|{label}>" for label, url in links if url)
        try:
            posted = await self.client.chat_postMessage(
                channel=channel,
                text=head[:3000],
                thread_ts=thread_ts or None,
                blocks=[
                    blockkit.section(f"*{head}*"),
                    blockkit.context(
                        f"from Alertmanager · service label `{service_label}`: "
                        f"`{blockkit.plain(service[:200]) or 'none'}`" + (f" · {shown}" if shown else "")
                    ),
                ],
            )
        except SlackApiError as exc:
            log.warning("cannot post an alert into %s: %s", channel[:40], exc.response.get("error"))
            return "", ""
        ts = thread_ts or str(posted["ts"])
        if not service:
            await self.poster.post(
                channel,
                ts,
                "no service",
                [
                    blockkit.context(
                        f"The alert carries no `{service_label}` label, so there is no service to investigate."
                    )
                ],
            )
            return ts, ""
        now = await self.desk.telemetry.now()
        try:
            run = await self.desk.open(
                service, f"{max(60, round(reach))}s", channel=channel, user=ALERTMANAGER, alert_time=now - began_ago
            )
        except AlreadyRunning as exc:
            await self.poster.post(channel, ts, "already running", [blockkit.context(await self._already(exc))])
            return ts, exc.run.id if exc.run is not None else ""
        except InputError as exc:
            await self.poster.post(
                channel,
                ts,
                "cannot investigate",
                [blockkit.context(f"Not investigated: {blockkit.plain(str(exc))[:500]}")],
            )
            return ts, ""
        except StorageError as exc:
            log.error("storage unavailable, alert on %s not investigated: %s", service[:60], exc)
            await self.poster.post(channel, ts, "storage unavailable", [blockkit.context(STORAGE_DOWN)])
            return ts, ""
        await self.desk.set_thread(run.id, parent_ts=ts, thread_ts=ts)
        task = asyncio.create_task(self._run(run, ts, team="", live=False))  # no one to name as recipient
        self._alert_runs.add(task)
        task.add_done_callback(self._alert_runs.discard)
        return ts, run.id

    async def finish_alert_runs(self) -> None:
        while self._alert_runs:
            await asyncio.gather(*list(self._alert_runs), return_exceptions=True)

    async def _already(self, exc: AlreadyRunning) -> str:
        if exc.run is None:
            return "That investigation is starting right now; its thread appears in a moment."
        row = await asyncio.to_thread(self.desk.store.investigation, exc.run.id)
        link = ""
        if row is not None and row.thread_ts:
            try:
                link = str(
                    (await self.client.chat_getPermalink(channel=row.channel, message_ts=row.thread_ts))["permalink"]
                )
            except SlackApiError:
                link = ""
        where = f"<{link}|its thread>" if link else "its thread"
        return f"An investigation of `{blockkit.plain(exc.run.service)}` is already running here: follow {where}."

    async def _drain(self, run: Run) -> None:
        """Run an investigation nobody can watch to its end, so its record is complete."""
        async for _ in self.desk.investigate(run):
            pass

    async def _run(
        self, run: Run, ts: str, *, team: str, parent_ts: str = "", live: bool = True, resume: bool = False
    ) -> None:
        stream = ThreadStream(
            self.client,
            channel=run.channel,
            thread_ts=ts,
            team_id=team,
            user_id=run.user,
            interval=self.stream_interval,
            stream=live,
        )
        narrator = Narrator()
        if resume:
            await stream.add(
                "↪ The bot replica narrating this investigation stopped; this one goes on from where it was."
            )
        else:
            queued = self.desk.queued_ahead()
            await stream.add(
                f"Reading telemetry of *{blockkit.plain(run.service)}* and its neighbours"
                + (f" (queued behind {queued} investigation(s))" if queued else "")
                + "…"
            )
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

    async def _failed(
        self,
        run: Run,
        stream: ThreadStream | None,
        thread_ts: str,
        parent_ts: str,
        exc: Exception,
        *,
        after_verdict: bool = False,
    ) -> None:
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
            await self.poster.post(run.channel, thread_ts, text, [blockkit.section(text)])
        await self._update_parent(run, parent_ts, f"❌ failed: {what[:200]}")

    async def _post_verdict(self, run: Run, ts: str, parent_ts: str) -> None:
        verdict, incident = await self.desk.casebook.verdict_and_incident(run.id)  # one lookup and audit for both
        suspects = [verdict.service, *(s for s, _, _, _ in verdict.trace.decision.ranking[:3])]
        changed, others = await self.changes.around(verdict.window, suspects) if self.changes else ([], 0)
        text, blocks = render.verdict(
            verdict,
            runbook=runbook_for(self.runbooks, verdict),
            tz=await self.people.zone(run.user),
            changes=changed,
            other_changes=others,
        )
        await self.poster.post(run.channel, ts, text, blocks)
        await self.poster.chart(
            run.channel,
            ts,
            await self.desk.followups.chart_for(verdict, incident),
            "The root cause's most anomalous signal",
        )
        status = (
            f"✅ done — {blockkit.plain(render.headline(verdict))} · STAR S {verdict.audit.score:.2f}"
            if verdict.trace.decision.ranking
            else "✅ done — no root cause found"
        )
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
        text, blocks = render.parent(run, status, await self.people.zone(run.user))
        await call(self.client.chat_update(channel=run.channel, ts=ts, text=text, blocks=blocks))

    # -- investigations a stop cut short --------------------------------------------------
    async def resume(self, investigation: str, *, channel: str, user: str, team: str) -> None:
        row = await self.actions.owned(investigation, channel)
        if row is None:
            return
        try:
            run = await self.desk.reopen(investigation, user=user)
        except InputError as exc:
            await self.poster.post(
                channel, row.thread_ts, str(exc), [blockkit.section(f"Cannot resume: {blockkit.plain(str(exc))}")]
            )
            return
        await self.desk.set_thread(run.id, parent_ts=row.parent_ts, thread_ts=row.thread_ts)
        await self._run(run, row.thread_ts, team=team, parent_ts=row.parent_ts)

    async def announce_recovered(self) -> None:
        """After a restart: a message with a resume button in each thread a stop cut short."""
        for id in self.desk.store.recovered:
            row = await asyncio.to_thread(self.desk.store.investigation, id)
            if row is not None and row.thread_ts:
                text, blocks = replies.interrupted(id)
                await self.poster.post(row.channel, row.thread_ts, text, blocks)
