"""Investigations as jobs: the real slack-bolt app enqueues on the machine's Redis (arq), a real
`rcabot worker` process runs them against the shared PostgreSQL record, and the thread is
narrated from the run's progress stream. A worker SIGKILLed mid-investigation is replaced and
the thread says it restarted, with one verdict; a broker restart loses no run and holds no ack.
Without Redis or PostgreSQL these skip, except under CI, where they fail."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import pytest

from bot.queue import QUEUE, events_key
from handlers.ids import REPAIR
from rca.search.actions import AgentKind
from rca.search.events import (
    ActionTaken,
    EvidenceFound,
    Finished,
    Handoff,
    HypothesesRanked,
    IterationStarted,
    Restarted,
    event_from_json,
    event_to_json,
)
from storage.database import open_database
from storage.investigations import Store
from tests.bot.slack_standin import (
    SlackStandIn,
    command_body,
    free_port,
    serve_process,
    wait_until_up,
)
from tests.bot.test_slack_app import SECRET, blocks_text, post, run, running

ROOT = Path(__file__).resolve().parents[2]
REDIS = os.environ.get("RCABOT_TEST_REDIS", "redis://127.0.0.1:6379/7")


@pytest.fixture()
def redis_url() -> Iterator[str]:
    import redis

    client = redis.Redis.from_url(REDIS, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable under CI: {exc}")
        pytest.skip(f"Redis is not reachable: {exc}")
    client.flushdb()
    yield REDIS
    client.flushdb()
    client.close()


def _worker(db: str, queue: str, slice_: Path, *, timeout: int = 8) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PROMETHEUS_URL")},
        "RCABOT_DB": db,
        "RCABOT_QUEUE": queue,
        "RCABOT_DATA": str(slice_),
        "RCABOT_NOW": "2023-01-29T13:36:00Z",
        "RCABOT_JOB_TIMEOUT": str(timeout),
        "RCABOT_WORKERS": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "worker"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_every_progress_event_survives_the_stream() -> None:
    events = [
        IterationStarted(AgentKind.METRIC, 1, 0, 0, 1.5),
        ActionTaken(AgentKind.LOG, "logs", "q{entity=a}", "ok", 0.4),
        EvidenceFound(AgentKind.TRACE, "ev-1", "a", "slow", 9.0),
        HypothesesRanked(AgentKind.METRIC, (("a", "cpu", 0.7), ("b", "memory", 0.2)), 0.5, 0.6, 0.7),
        Handoff(AgentKind.METRIC, AgentKind.LOG, "low r", "a leads"),
        Restarted(2, "worker stopped"),
        Finished("a explains it", {"x": [1, 2]}),
    ]
    for e in events:
        assert event_from_json(json.loads(json.dumps(event_to_json(e)))) == e
    with pytest.raises(ValueError):
        event_from_json({"kind": "Nope"})


def test_rca_runs_on_a_worker_process(tmp_path: Path, nezha_slice: Path, postgres_url: str, redis_url: str) -> None:
    worker = _worker(postgres_url, redis_url, nezha_slice)

    async def scenario() -> None:
        async with running(tmp_path, nezha_slice, settings_={"db": postgres_url, "queue": redis_url}) as (
            bot,
            slack,
            url,
        ):
            status, _, seconds = await post(url, command_body("Frontend 10m", response_url=slack.response_url()))
            assert status == 200 and seconds < 3.0
            verdict = await slack.wait_for(
                lambda c: c.method == "chat.postMessage" and REPAIR in blocks_text(c), timeout=90
            )
            streamed = " ".join(str(c.params.get("chunks")) for c in slack.calls if "Stream" in c.method)
            assert "now suspects" in streamed  # narrated from the worker's progress stream
            inv = bot.store.by_thread(verdict.params["channel"], verdict.params["thread_ts"])
            assert inv is not None and inv.status == "done" and inv.trace is not None  # stored by the worker
            verdicts = [c for c in slack.of("chat.postMessage") if REPAIR in blocks_text(c)]
            assert len(verdicts) == 1

    try:
        run(scenario)
    finally:
        _stop(worker)


def test_a_worker_killed_mid_investigation_is_replaced(
    tmp_path: Path, nezha_slice: Path, postgres_url: str, redis_url: str
) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    first = _worker(postgres_url, redis_url, nezha_slice, timeout=5)
    second: subprocess.Popen[bytes] | None = None

    async def scenario() -> None:
        nonlocal second
        async with running(tmp_path, nezha_slice, settings_={"db": postgres_url, "queue": redis_url}) as (
            bot,
            slack,
            url,
        ):
            await post(url, command_body("Frontend 10m", response_url=slack.response_url()))
            for _ in range(600):  # until the first worker has published some progress
                rows = bot.store.between(0, 1e12)
                if rows and client.xlen(events_key(rows[0].id)) > 0:
                    break
                await asyncio.sleep(0.05)
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            second = _worker(postgres_url, redis_url, nezha_slice, timeout=5)
            verdict = await slack.wait_for(
                lambda c: c.method == "chat.postMessage" and REPAIR in blocks_text(c), timeout=120
            )
            streamed = " ".join(
                str(c.params.get("chunks")) + str(c.params.get("text", ""))
                for c in slack.calls
                if c.params.get("thread_ts") == verdict.params["thread_ts"] or "Stream" in c.method
            )
            assert "restarted (attempt 2)" in streamed
            await asyncio.sleep(2)  # a duplicate would come now
            assert len([c for c in slack.of("chat.postMessage") if REPAIR in blocks_text(c)]) == 1
            inv = bot.store.investigation(bot.store.between(0, 1e12)[0].id)
            assert inv is not None and inv.status == "done"

    try:
        run(scenario)
    finally:
        _stop(first)
        if second is not None:
            _stop(second)
        client.close()


@pytest.fixture()
def own_redis(tmp_path: Path) -> Iterator[tuple[str, Callable[[], subprocess.Popen[bytes]]]]:
    """A Redis server of this test's own, without persistence as the machine's, so that the
    test can SIGKILL it and start it again on the same port: its URL and how to start it."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed under CI")
        pytest.skip("redis-server is not installed")
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(tmp_path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        return proc

    yield f"redis://127.0.0.1:{port}/0", start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_broker_restart_loses_no_investigation_and_holds_no_ack(
    tmp_path: Path, nezha_slice: Path, postgres_url: str, own_redis: tuple[str, Callable[[], subprocess.Popen[bytes]]]
) -> None:
    """Redis SIGKILLed with one run queued and no worker: a `/rca` sent while it is down is acked
    at once; once Redis is back (empty), the worker reconnects by itself, the lost run is queued
    again from the record and the waiting one is queued, and each gets one verdict."""
    import redis

    url, start = own_redis
    broker = start()
    client = redis.Redis.from_url(url)
    for _ in range(100):
        with suppress(redis.ConnectionError):
            if client.ping():
                break
        time.sleep(0.05)
    worker: subprocess.Popen[bytes] | None = None

    async def scenario() -> None:
        nonlocal broker, worker
        async with running(tmp_path, nezha_slice, settings_={"db": postgres_url, "queue": url}) as (bot, slack, events):
            assert bot.desk.queue is not None
            bot.desk.queue.stall = 1.0
            await post(events, command_body("Frontend 10m", response_url=slack.response_url(), trigger_id="lost.1"))
            for _ in range(200):  # queued, no worker yet
                if client.zcard(QUEUE):
                    break
                await asyncio.sleep(0.05)
            assert client.zcard(QUEUE) == 1
            broker.send_signal(signal.SIGKILL)
            broker.wait(10)
            worker = _worker(postgres_url, url, nezha_slice)  # starts with no Redis to reach
            status, _, seconds = await post(
                events,
                command_body("Frontend 10m", response_url=slack.response_url(), channel="C0OTHER", trigger_id="down.1"),
            )
            assert status == 200 and seconds < 3.0  # acked; the queue is not waited on
            await slack.wait_for(lambda c: "cannot be reached" in str(c.params), timeout=30)  # said in its thread
            broker = start()  # back, and empty
            verdicts = lambda: [c for c in slack.of("chat.postMessage") if REPAIR in blocks_text(c)]  # noqa: E731
            await slack.wait_for(lambda c: len(verdicts()) == 2, timeout=150)
            assert "queued again" in " ".join(str(c.params) for c in slack.calls)
            await asyncio.sleep(2)  # a duplicate would come now
            assert len(verdicts()) == 2
            rows = bot.store.between(0, 1e12)
            assert len(rows) == 2
            assert all(r.status == "done" for r in rows), [(r.status, r.error) for r in rows]

    try:
        run(scenario)
    finally:
        if worker is not None:
            _stop(worker)
        client.close()


@asynccontextmanager
async def two_replicas(
    db: str, extra: dict[str, str]
) -> AsyncIterator[tuple[SlackStandIn, list[str], list[subprocess.Popen[bytes]]]]:
    """Two `rcabot serve` replicas behind one Slack app, sharing the record and the queue: the
    stand-in, each replica's events URL, and their processes (stopped on the way out)."""
    slack = SlackStandIn()
    await slack.start()
    ports = [free_port(), free_port()]
    replicas: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            replicas.append(serve_process(slack, secret=SECRET, port=port, db=db, extra=extra))  # type: ignore[arg-type]
        for port in ports:
            await wait_until_up(port)
        yield slack, [f"http://127.0.0.1:{port}/slack/events" for port in ports], replicas
    finally:
        for p in replicas:
            _stop(p)
        await slack.stop()


@pytest.mark.parametrize("worker_first", [False, True], ids=["killed-before-the-run", "killed-during-it"])
def test_a_replica_killed_mid_narration_is_taken_over_by_another(
    tmp_path: Path, nezha_slice: Path, postgres_url: str, redis_url: str, worker_first: bool
) -> None:
    """Killed while the job waits for a worker, the other replica narrates the whole run in the
    thread; killed while it runs, the other replica goes on (or, if the run ended meanwhile,
    posts its verdict); either way one verdict, posted by the replica still alive."""
    worker = _worker(postgres_url, redis_url, nezha_slice, timeout=30) if worker_first else None
    extra = {"RCABOT_QUEUE": redis_url, "RCABOT_RELAY_LEASE": "2", "RCABOT_DATA": str(nezha_slice)}

    async def scenario() -> None:
        nonlocal worker
        async with two_replicas(postgres_url, extra) as (slack, urls, replicas):
            await post(urls[0], command_body("Frontend 10m", response_url=slack.response_url(), trigger_id="replica-1"))
            store, db = Store(postgres_url, recover=False), open_database(postgres_url)
            first_owner = None
            for _ in range(600):  # until the first replica holds the thread (and, with a worker, has told it something)
                rows = db.query("select relay_owner, relayed from investigations")
                if rows and rows[0]["relay_owner"] and (rows[0]["relayed"] or not worker_first):
                    first_owner = rows[0]["relay_owner"]
                    break
                await asyncio.sleep(0.02)
            replicas[0].send_signal(signal.SIGKILL)
            replicas[0].wait(10)
            killed_at = len(slack.calls)
            if worker is None:  # the job waits: once the other replica holds the thread, a worker comes
                for _ in range(300):
                    if db.query("select relay_owner from investigations")[0]["relay_owner"] != first_owner:
                        break
                    await asyncio.sleep(0.05)
                worker = _worker(postgres_url, redis_url, nezha_slice, timeout=30)
            verdict = await slack.wait_for(
                lambda c: c.method == "chat.postMessage" and REPAIR in blocks_text(c), timeout=120
            )
            assert slack.calls.index(verdict) >= killed_at  # posted by the replica still alive
            said = " ".join(str(c.params) for c in slack.calls[killed_at:])
            took_over = "this one goes on from where it was" in said
            assert took_over or worker_first  # a run still to come is narrated by the other replica
            assert took_over or not any("now suspects" in str(c.params) for c in slack.calls[killed_at:])
            await asyncio.sleep(3)  # a duplicate would come now
            assert len([c for c in slack.of("chat.postMessage") if REPAIR in blocks_text(c)]) == 1
            row = store.by_thread(verdict.params["channel"], verdict.params["thread_ts"])
            assert row is not None and row.status == "done"
            store.close()
            db.close()

    try:
        run(scenario)
    finally:
        if worker is not None:
            _stop(worker)


def test_a_slack_retry_on_the_other_replica_starts_nothing_new(
    tmp_path: Path, nezha_slice: Path, postgres_url: str, redis_url: str
) -> None:
    async def scenario() -> None:
        async with two_replicas(postgres_url, {"RCABOT_QUEUE": redis_url, "RCABOT_DATA": str(nezha_slice)}) as (
            slack,
            urls,
            _,
        ):
            body = command_body("Frontend 10m", response_url=slack.response_url(), trigger_id="retried.1")
            first = await post(urls[0], body)
            again = await post(
                urls[1], body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
            )
            assert first[0] == again[0] == 200
            await slack.wait_for(lambda c: c.method == "chat.postMessage" and not c.params.get("thread_ts"))
            await asyncio.sleep(2)  # a second investigation would be recorded and posted by now
            store = Store(postgres_url, recover=False)
            assert len(store.between(0, 1e12)) == 1
            assert len([c for c in slack.of("chat.postMessage") if not c.params.get("thread_ts")]) == 1
            store.close()

    run(scenario)
