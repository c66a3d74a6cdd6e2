"""The daily summary's schedule: a cron expression in a time zone, run on the event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from croniter import croniter

log = logging.getLogger("rcabot.scheduler")


def next_run(cron: str, tz: str, *, after: float) -> float:
    """The first time strictly after `after` that the cron expression names, read in `tz`."""
    start = datetime.fromtimestamp(after, ZoneInfo(tz))
    return float(croniter(cron, start).get_next(float))


async def every(cron: str, tz: str, job: Callable[[], Awaitable[None]], *,
                clock: Callable[[], float] = time.time,
                sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:  # fmt: skip
    """Run `job` at each time the schedule names, forever; a failing run is logged, not fatal."""
    after = clock()
    while True:
        due = next_run(cron, tz, after=after)
        await sleep(max(0.0, due - clock()))
        after = max(clock(), due)  # never the same slot twice, even if the clock lags
        try:
            await job()
        except Exception:  # the edge of a background job: log it and keep the schedule
            log.exception("scheduled job failed")
