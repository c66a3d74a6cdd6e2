"""The database behind the bot is killed and comes back: `/rca` is answered with a clear
"storage unavailable", never dropped, and works again once the database is back.

The bot keeps its record in a PostgreSQL server of this test's own (the machine's server
serves every other test), started from the machine's PostgreSQL binaries, SIGKILLed with all
its backends, and started again on the same data, which it recovers. Without those binaries
the test skips, except under CI, where it fails."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.bot.slack_standin import command_body, free_port
from tests.bot.test_slack_app import post, run, running


def _binary(name: str) -> str:
    found = shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} (PostgreSQL's server) is not installed under CI")
        pytest.skip(f"{name} (PostgreSQL's server) is not installed")
    return found


@pytest.fixture()
def own_postgres() -> Iterator[tuple[str, Callable[[], subprocess.Popen[bytes]]]]:
    """A PostgreSQL server of this test's own: its URL and how to start it (again)."""
    initdb, postgres = _binary("initdb"), _binary("postgres")
    user = "postgres" if os.geteuid() == 0 else None  # the server refuses to run as root
    home = Path(tempfile.mkdtemp(prefix="rcabot-pg-"))  # not under pytest's root-only folder
    if user:
        shutil.chown(home, user)
    subprocess.run(
        [initdb, "-D", str(home / "data"), "-A", "trust", "-U", "postgres"],
        user=user,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                postgres,
                "-D",
                str(home / "data"),
                "-p",
                str(port),
                "-k",
                str(home),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
            ],
            user=user,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        for _ in range(200):
            if (
                subprocess.run(
                    [_binary("pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True
                ).returncode
                == 0
            ):
                return proc
            time.sleep(0.05)
        raise AssertionError("the test's PostgreSQL did not start")

    yield f"postgresql://postgres@127.0.0.1:{port}/postgres", start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    shutil.rmtree(home, ignore_errors=True)


def test_rca_says_storage_is_unavailable_and_recovers(
    tmp_path: Path, nezha_slice: Path, own_postgres: tuple[str, Callable[[], subprocess.Popen[bytes]]]
) -> None:
    url, start = own_postgres
    server = start()

    async def scenario() -> None:
        nonlocal server
        async with running(tmp_path, nezha_slice, settings_={"db": url}) as (bot, slack, endpoint):
            os.killpg(server.pid, signal.SIGKILL)  # the postmaster and every backend
            server.wait(10)
            status, body, _ = await post(
                endpoint, command_body("Frontend 10m", response_url=slack.response_url(), trigger_id="t-down")
            )
            assert status == 200  # acked: Slack shows no "dispatch failed"
            for _ in range(100):
                if slack.responses:
                    break
                await asyncio.sleep(0.1)
            assert slack.responses and "Storage unavailable" in slack.responses[0]["text"]
            assert not slack.of("chat.postMessage")  # nothing posted for a run that was never recorded
            status, _, _ = await post(
                endpoint, command_body("status", response_url=slack.response_url(), trigger_id="t-status-down")
            )
            assert status == 200  # acked before the database is read
            for _ in range(100):
                if len(slack.responses) > 1:
                    break
                await asyncio.sleep(0.1)
            assert "Storage unavailable" in slack.responses[1]["text"]
            server = start()  # the database is back (recovered from its crash): the next command runs
            status, _, _ = await post(
                endpoint, command_body("Frontend 10m", response_url=slack.response_url(), trigger_id="t-back")
            )
            for _ in range(300):
                if bot.store.between(0, 1e12):
                    break
                await asyncio.sleep(0.1)
            assert [r.service for r in bot.store.between(0, 1e12)] == ["Frontend"]

    run(scenario)


def test_storage_lost_mid_investigation_leaves_no_thread_hanging(
    tmp_path: Path, nezha_slice: Path, own_postgres: tuple[str, Callable[[], subprocess.Popen[bytes]]]
) -> None:
    """The database dies while an investigation runs: its stream is closed, the thread says
    what failed and what to do, and the parent message no longer says it is running."""
    url, start = own_postgres
    server = start()

    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_={"db": url}) as (_bot, slack, endpoint):
            status, _, _ = await post(
                endpoint, command_body("Frontend 10m", response_url=slack.response_url(), trigger_id="t-mid")
            )
            assert status == 200
            for _ in range(300):  # the thread is open and narrating: the run is recorded
                if slack.of("chat.startStream") or slack.of("chat.appendStream"):
                    break
                await asyncio.sleep(0.02)
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
            for _ in range(600):
                updates = [c for c in slack.of("chat.update") if "failed" in str(c.params.get("text", ""))]
                if updates and not slack.open_streams():
                    break
                await asyncio.sleep(0.05)
            assert not slack.open_streams(), "a stream was left open"
            assert updates, "the parent still says it is running"
            told = " ".join(str(c.params) for c in slack.calls)
            assert "storage unavailable" in told and "database is back" in told

    run(scenario)
