"""The database behind the bot goes away and comes back: `/rca` is answered with a clear
"storage unavailable", never dropped, and works again once the database is back.

The bot keeps its record in the real PostgreSQL, reached through a TCP relay this test can cut
(stopping the machine's server would take it from every other test)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.bot.slack_standin import command_body, free_port
from tests.bot.test_slack_app import post, run, running


class Relay:
    """A TCP relay to one address, on a thread of its own (the bot's database calls block their
    thread); `cut()` closes it and every connection through it, `open()` listens again."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    async def open(self) -> None:
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._open(), self._loop))

    async def cut(self) -> None:
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._cut(), self._loop))

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._cut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for w in list(self._writers):
            w.close()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers |= {writer, up_writer}

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            w.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def test_rca_says_storage_is_unavailable_and_recovers(tmp_path: Path, nezha_slice: Path, postgres_url: str) -> None:
    url = urlsplit(postgres_url)

    async def scenario() -> None:
        relay = Relay(url.hostname or "127.0.0.1", url.port or 5432)
        await relay.open()
        through = urlunsplit(url._replace(netloc=f"{url.username}@127.0.0.1:{relay.port}"))
        async with running(tmp_path, nezha_slice, settings_={"db": through}) as (bot, slack, endpoint):
            await relay.cut()
            status, body, _ = await post(endpoint, command_body("Frontend 10m", response_url=slack.response_url(),
                                                                trigger_id="t-down"))  # fmt: skip
            assert status == 200  # acked: Slack shows no "dispatch failed"
            for _ in range(100):
                if slack.responses:
                    break
                await asyncio.sleep(0.1)
            assert slack.responses and "Storage unavailable" in slack.responses[0]["text"]
            assert not slack.of("chat.postMessage")  # nothing posted for a run that was never recorded
            await relay.open()  # the database is back: the next command runs
            status, _, _ = await post(endpoint, command_body("Frontend 10m", response_url=slack.response_url(),
                                                             trigger_id="t-back"))  # fmt: skip
            for _ in range(300):
                if bot.store.between(0, 1e12):
                    break
                await asyncio.sleep(0.1)
            assert [r.service for r in bot.store.between(0, 1e12)] == ["Frontend"]
        relay.stop()

    run(scenario)
