"""The daily summary in Slack: a channel's own investigations of the last day, posted on
demand or at the slot the channel subscribed to (see `bot.scheduler`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot import blockkit, replies, scheduler
from bot.desk import Desk
from bot.slackcalls import call
from rca.errors import InputError
from storage.database import StorageError
from storage.schedules import SummarySchedule

DAY = 86400.0


class Summaries:
    def __init__(
        self,
        desk: Desk,
        client: AsyncWebClient,
        schedule: SummarySchedule | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.desk = desk
        self.client = client
        self.schedule = schedule
        self.clock = clock

    async def post(self, channel: str) -> None:
        """The last day's investigations of this channel, posted into it (no other channel's),
        timed in the zone its daily summary was set in (UTC without one)."""
        end = self.clock()
        try:
            sub = await asyncio.to_thread(self.schedule.subscription, channel) if self.schedule is not None else None
        except StorageError:
            sub = None
        text, blocks = replies.summary(
            await self.desk.summary(start=end - DAY, end=end, channel=channel), tz=sub.tz if sub is not None else "UTC"
        )
        await call(self.client.chat_postMessage(channel=channel, text=text, blocks=blocks))

    async def subscribe(self, *, channel: str, user: str, at: str | None, tz: str) -> str:
        """Subscribe the channel at `at` (HH:MM) in `tz`, or (None) stop it; what to tell the user."""
        if self.schedule is None:
            return "This rcabot keeps no schedule; ask the team that runs it."
        if at is None:
            gone = await asyncio.to_thread(self.schedule.unsubscribe, channel)
            return "The daily summary here is stopped." if gone else "This channel has no daily summary to stop."
        try:
            cron = scheduler.daily(at, tz)
        except InputError as exc:
            return blockkit.plain(str(exc))
        sub = await asyncio.to_thread(self.schedule.subscribe, channel, cron=cron, tz=tz, user=user, now=self.clock())
        when = blockkit.clock(sub.next_run, sub.tz)
        await call(
            self.client.chat_postMessage(
                channel=channel,
                text=f"daily RCA summary at {at} {tz}",
                blocks=[
                    blockkit.context(
                        f"<@{user}> asked for this channel's RCA summary every day at {at} {tz}; "
                        f"the first is {when}. `/rca summary off` stops it."
                    )
                ],
            )
        )
        return f"Done: this channel's summary every day at {at} {tz}, first {when}."

    async def run(self) -> None:
        """Post each subscribed channel's summary at its slot, forever."""
        if self.schedule is not None:
            await scheduler.run_summaries(self.schedule, self.post, clock=self.clock)

    def next_slot(self, channel: str) -> str:
        """The channel's next summary, as the status says it ("" without one); reads the database."""
        sub = self.schedule.subscription(channel) if self.schedule is not None else None
        return f"\nDaily summary here: next at {blockkit.clock(sub.next_run, sub.tz)}." if sub is not None else ""
