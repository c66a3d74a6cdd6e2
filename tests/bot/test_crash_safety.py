"""Crash safety of `rcabot serve` as a real process: SIGKILL mid-investigation loses nothing
committed and offers a resume in the thread; SIGTERM lets running work finish. And SIGKILL in
the middle of repair-memory writes loses no committed row."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from handlers.ids import REPAIR, RESUME
from lab.processes import free_port
from tests.bot.slack_standin import (
    SlackStandIn,
    action_body,
    command_body,
    serve_process,
    sign,
    wait_until_up,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "crash-test-signing-secret"


def serve(slack: SlackStandIn, db: Path, port: int) -> subprocess.Popen[bytes]:
    return serve_process(slack, secret=SECRET, port=port, db=db, workers=1, extra={"RCABOT_SHUTDOWN_GRACE": "60"})


async def ready(port: int) -> None:
    await wait_until_up(port, timeout=20)


async def post(port: int, body: tuple[str, str]) -> int:
    text, ctype = body
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            f"http://127.0.0.1:{port}/slack/events",
            data=text.encode(),
            headers={"Content-Type": ctype, **sign(SECRET, text)},
        ) as r,
    ):
        return r.status


def rows(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        return dict(conn.execute("select id, status from investigations").fetchall())


def test_sigkill_then_resume_and_sigterm_finishes(tmp_path: Path) -> None:
    db = tmp_path / "rcabot.db"

    async def scenario() -> None:
        slack = SlackStandIn()
        await slack.start()
        try:
            port = free_port()
            proc = serve(slack, db, port)
            await ready(port)
            for i in range(3):  # one runs, two wait for the single worker
                await post(
                    port,
                    command_body(
                        "Frontend 10m", response_url=slack.response_url(), channel=f"C{i}", trigger_id=f"kill-{i}"
                    ),
                )
            await slack.wait_for(lambda c: c.method == "chat.startStream")
            for _ in range(100):  # all three recorded (each right after its ack)
                if db.exists() and len(rows(db)) == 3:
                    break
                await asyncio.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            before = rows(db)  # integrity ok; every started investigation is there
            assert len(before) == 3 and "running" in before.values()
            cut_short = sorted(i for i, s in before.items() if s == "running")

            port = free_port()
            proc = serve(slack, db, port)
            await ready(port)
            resume = await slack.wait_for(
                lambda c: c.method == "chat.postMessage" and RESUME in str(c.params.get("blocks"))
            )
            after = rows(db)
            assert [after[i] for i in cut_short] == ["interrupted"] * len(cut_short)
            assert {v for k, v in after.items() if k not in cut_short} <= {"done"}
            thread, channel = resume.params["thread_ts"], resume.params["channel"]
            inv = next(i for i in cut_short if i in str(resume.params["blocks"]))
            await post(
                port,
                action_body(
                    RESUME,
                    inv,
                    channel=channel,
                    message_ts=thread,
                    response_url=slack.response_url("r"),
                    trigger_id="resume-1",
                ),
            )
            await slack.wait_for(
                lambda c: (
                    c.method == "chat.postMessage"
                    and c.params.get("thread_ts") == thread
                    and REPAIR in str(c.params.get("blocks"))
                )
            )

            # SIGTERM: the running investigation finishes before the process exits
            await post(
                port, command_body("Frontend 5m", response_url=slack.response_url(), channel="C9", trigger_id="term-1")
            )
            await slack.wait_for(lambda c: c.method == "chat.postMessage" and c.params.get("channel") == "C9")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(90) == 0
            finished = rows(db)
            assert all(s in ("done", "interrupted") for s in finished.values())
            assert [s for i, s in finished.items() if i not in before and s != "done"] == []
        finally:
            if proc.poll() is None:
                proc.kill()
            await slack.stop()

    asyncio.run(scenario())


WRITER = """
import sys
from rca.star.memory import Pattern, RepairRecord
from storage.repair_memory import SqlRepairMemory
memory = SqlRepairMemory(sys.argv[1])
for i in range(100000):
    memory.remember(RepairRecord(Pattern("cpu", "metrics", i % 5, i % 7), "analysis_structure", f"p{i}", 0.1))
    print(i + 1, flush=True)
"""


def test_sigkill_during_repair_memory_writes_loses_no_committed_row(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    committed = 0
    started = time.monotonic()
    while committed < 300 and time.monotonic() - started < 60:
        line = proc.stdout.readline()
        committed = int(line) if line.strip() else committed
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        kept = conn.execute("select count(*) from repair_memory").fetchone()[0]
    assert committed >= 300 and kept >= committed  # every write reported committed is there
