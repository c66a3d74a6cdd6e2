"""The daily summaries' schedule: each channel's cron expression in its time zone, kept in the
database (`storage.schedules`), run on the event loop of every bot process that shares it."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rca.errors import InputError
from storage.schedules import SummarySchedule

log = logging.getLogger("rcabot.scheduler")

POLL = 30.0  # seconds between looks at the table: subscriptions made by another process show up within this

_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def next_run(cron: str, tz: str, after: float) -> float:
    """The first time strictly after `after` that the cron expression names, read in `tz`."""
    start = datetime.fromtimestamp(after, ZoneInfo(tz))
    return float(croniter(cron, start).get_next(float))


def daily(at: str, tz: str) -> str:
    """The cron expression of "every day at HH:MM" in a time zone; InputError names what is wrong."""
    match = _CLOCK.match(at)
    if match is None:
        raise InputError(f"{at[:20]!r} is not a time of day; give HH:MM, e.g. 09:00")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"{tz[:40]!r} is not a time zone; give one such as UTC or Europe/Berlin") from None
    return f"{int(match.group(2))} {int(match.group(1))} * * *"


async def run_summaries(
    schedule: SummarySchedule,
    post: Callable[[str], Awaitable[None]],
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    poll: float = POLL,
) -> None:
    """Post each subscribed channel's summary when its slot comes, forever. The slot is claimed
    in the database before the post, so processes sharing it post once per slot between them,
    and a slot that passed while no process ran is posted at the next start. A failing post is
    logged, not fatal."""
    while True:
        for sub in await asyncio.to_thread(schedule.claim_due, clock()):
            try:
                await post(sub.channel)
            except Exception:  # the edge of a background job: log it and keep the schedule
                log.exception("the summary for %s failed", sub.channel[:40])
        upcoming = [s.next_run for s in await asyncio.to_thread(schedule.all)]
        await sleep(max(0.0, min([poll, *(t - clock() for t in upcoming)])))
