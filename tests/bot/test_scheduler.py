import asyncio
import contextlib

from bot.scheduler import every, next_run
from rca.timestamps import parse_timestamp


def test_next_run_reads_the_cron_in_its_time_zone() -> None:
    after = parse_timestamp("2026-03-28T10:00:00Z")
    assert next_run("0 9 * * *", "UTC", after=after) == parse_timestamp("2026-03-29T09:00:00Z")
    # Berlin moves to summer time that night: 09:00 local is 07:00 UTC
    assert next_run("0 9 * * *", "Europe/Berlin", after=after) == parse_timestamp("2026-03-29T07:00:00Z")
    assert next_run("30 17 * * 1-5", "UTC", after=parse_timestamp("2026-11-28T12:00:00Z")) == parse_timestamp(
        "2026-11-30T17:30:00Z")  # Saturday -> Monday


def test_every_runs_the_job_when_due_and_survives_its_failure() -> None:
    ran: list[int] = []

    async def job() -> None:
        ran.append(1)
        raise RuntimeError("slack is down")

    now = [parse_timestamp("2026-11-30T08:00:00Z")]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:  # time passes at once
        slept.append(seconds)
        now[0] += seconds
        if len(slept) == 3:
            raise asyncio.CancelledError

    async def scenario() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await every("0 9 * * *", "UTC", job, clock=lambda: now[0], sleep=sleep)

    asyncio.run(scenario())
    assert ran == [1, 1]  # a failing run does not stop the schedule
    assert slept == [3600.0, 86400.0, 86400.0]
