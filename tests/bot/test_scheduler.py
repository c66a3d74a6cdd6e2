import asyncio
import contextlib
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from bot.scheduler import daily, next_run, run_summaries
from rca.errors import InputError
from rca.timestamps import parse_timestamp
from storage.schedules import SummarySchedule


def test_next_run_reads_the_cron_in_its_time_zone() -> None:
    after = parse_timestamp("2026-03-28T10:00:00Z")
    assert next_run("0 9 * * *", "UTC", after) == parse_timestamp("2026-03-29T09:00:00Z")
    # Berlin moves to summer time that night: 09:00 local is 07:00 UTC
    assert next_run(daily("09:00", "Europe/Berlin"), "Europe/Berlin", after) == parse_timestamp("2026-03-29T07:00:00Z")
    assert next_run("30 17 * * 1-5", "UTC", parse_timestamp("2026-11-28T12:00:00Z")) == parse_timestamp(
        "2026-11-30T17:30:00Z"
    )  # Saturday -> Monday


@pytest.mark.parametrize(
    ("at", "tz"),
    [
        ("25:00", "UTC"),
        ("9", "UTC"),
        ("09:60", "UTC"),
        ("09:00", "Mars/Olympus"),
        ("09:00", "../../etc/passwd"),
        ("* * * * *", "UTC"),
    ],
)
def test_a_bad_time_or_zone_is_refused_by_name(at: str, tz: str) -> None:
    with pytest.raises(InputError, match="time of day|time zone"):
        daily(at, tz)


def _run(schedule: SummarySchedule, now: list[float], *, rounds: int) -> list[str]:
    """The summary loop for `rounds` sleeps, with time passing at once; the channels it posted."""
    posted: list[str] = []

    async def post(channel: str) -> None:
        posted.append(channel)
        if channel == "C0BROKEN":
            raise RuntimeError("slack is down")

    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += max(seconds, 1.0)
        if len(slept) == rounds:
            raise asyncio.CancelledError

    async def scenario() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await run_summaries(schedule, post, clock=lambda: now[0], sleep=sleep, poll=3600)

    asyncio.run(scenario())
    return posted


def test_each_channel_gets_its_summary_at_its_slot_and_a_failure_keeps_the_schedule(tmp_path: Path) -> None:
    now = [parse_timestamp("2026-11-30T08:00:00Z")]
    schedule = SummarySchedule(tmp_path / "bot.db", next_run)
    schedule.subscribe("C0A", cron=daily("09:00", "UTC"), tz="UTC", user="U1", now=now[0])
    schedule.subscribe("C0BROKEN", cron=daily("09:30", "UTC"), tz="UTC", user="U1", now=now[0])
    posted = _run(schedule, now, rounds=30)  # a little over a day, an hour a step at most
    assert posted == ["C0A", "C0BROKEN", "C0A", "C0BROKEN"]
    assert schedule.subscription("C0A").next_run > now[0]  # type: ignore[union-attr]
    assert schedule.unsubscribe("C0A") and not schedule.unsubscribe("C0A")
    assert _run(schedule, now, rounds=30) == ["C0BROKEN"]


def test_a_restart_across_the_slot_still_posts_once(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    before = parse_timestamp("2026-11-30T08:59:00Z")
    SummarySchedule(db, next_run).subscribe("C0A", cron="0 9 * * *", tz="UTC", user="U1", now=before)
    # the process stops at 08:59 and starts again at 11:00, two hours after the slot
    now = [parse_timestamp("2026-11-30T11:00:00Z")]
    again = SummarySchedule(db, next_run)
    assert _run(again, now, rounds=2) == ["C0A"]  # posted late, once
    assert again.subscription("C0A").next_run == parse_timestamp("2026-12-01T09:00:00Z")  # type: ignore[union-attr]
    # days missed post once, not once per day missed
    now = [parse_timestamp("2026-12-05T10:00:00Z")]
    assert _run(again, now, rounds=2) == ["C0A"]


def _replica(db: str, start: float, slots: int, out: str, go: Any) -> None:
    """One bot process's summary loop over `slots` minutes of its own clock, appending what it posts."""
    schedule = SummarySchedule(db, next_run)
    go.wait()
    now = start
    with open(out, "a") as posts:
        for _ in range(slots * 4):  # four looks a minute, as two processes with their own timers would
            for sub in schedule.claim_due(now):
                posts.write(f"{sub.channel} {sub.next_run}\n")
                posts.flush()
            now += 15


def test_two_processes_sharing_the_database_post_once_per_slot(record: str, tmp_path: Path) -> None:
    db, start, slots = record, parse_timestamp("2026-11-30T08:59:30Z"), 40
    schedule = SummarySchedule(db, next_run)
    for channel in ("C0A", "C0B", "C0C"):
        schedule.subscribe(channel, cron="* * * * *", tz="UTC", user="U1", now=start)  # every minute
    context = multiprocessing.get_context("fork")  # two processes, each with its own connection
    go = context.Event()
    outs = [tmp_path / f"posts-{i}.txt" for i in range(2)]
    procs = [context.Process(target=_replica, args=(db, start, slots, str(out), go)) for out in outs]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = [line for out in outs if out.exists() for line in out.read_text().splitlines()]
    assert len(lines) == len(set(lines))  # no slot posted twice
    assert {line.split()[0] for line in lines} == {"C0A", "C0B", "C0C"}
    per_channel = {c: sum(line.startswith(c) for line in lines) for c in ("C0A", "C0B", "C0C")}
    assert all(slots - 1 <= n <= slots for n in per_channel.values())  # every minute's slot, once
