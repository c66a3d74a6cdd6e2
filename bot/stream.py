"""Progress lines into a Slack thread, live.

Slack's chat streaming API (`chat.startStream` / `appendStream` / `stopStream`, the SDK's
`chat_stream`) is tried first. Where it is unavailable (an older workspace, a token type or a
channel it refuses) or the stream dies on the server side, one message is posted and then
updated with `chat.update`. Either way text leaves at most once per `interval` seconds; a 429
is retried after its Retry-After by the client's rate-limit handler.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("rcabot.stream")

UPDATE_MAX = 3500  # characters of the fallback message; the oldest lines scroll off


class ThreadStream:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel: str,
        thread_ts: str,
        team_id: str = "",
        user_id: str = "",
        interval: float = 1.0,
        stream: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._channel = channel
        self._thread_ts = thread_ts
        self._team_id = team_id
        self._user_id = user_id
        self._interval = interval
        self._clock = clock
        self._pending: list[str] = []
        self._text = ""  # everything sent, for the chat.update fallback
        self._stream: AsyncChatStream | None = None
        self._fallback_ts: str | None = None
        # stream | update; a stream in a channel must name who it is for, so one with no one to
        # name (an investigation an alert started) is asked for with stream=False
        self._mode = "stream" if stream else "update"
        self._last_flush = float("-inf")
        self._lock = asyncio.Lock()
        self._ticker: asyncio.Task[None] | None = None

    @property
    def mode(self) -> str:
        return self._mode

    async def add(self, line: str) -> None:
        """Queue one line; it leaves with the next flush (at most one a second)."""
        self._pending.append(line)
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            wait = self._last_flush + self._interval - self._clock()
            await asyncio.sleep(max(wait, 0.05))
            if self._pending:  # shielded: closing must not abandon a send waiting out a 429
                await asyncio.shield(self.flush())

    async def flush(self) -> None:
        async with self._lock:
            if not self._pending or self._clock() - self._last_flush < self._interval:
                return
            chunk = "\n".join(self._pending) + "\n"
            self._pending.clear()
            self._last_flush = self._clock()
            await self._send(chunk)
            self._last_flush = self._clock()  # the pace counts from when the send got through

    async def close(self, final: str = "") -> None:
        """Send what is left, and end the stream."""
        if self._ticker is not None:
            self._ticker.cancel()
        async with self._lock:
            await asyncio.sleep(max(0.0, self._last_flush + self._interval - self._clock()))  # keep the pace
            chunk = "\n".join(self._pending + ([final] if final else []))
            self._pending.clear()
            if self._mode == "stream" and self._stream is not None:
                try:
                    await self._stream.stop(markdown_text=chunk + "\n" if chunk else None)
                    return
                except SlackApiError as exc:
                    self._fall_back(exc)
            if chunk or self._mode == "stream":
                await self._send(chunk + "\n")
            if self._mode == "stream" and self._stream is not None:  # a stream opened by that send is ended too
                try:
                    await self._stream.stop()
                except SlackApiError as exc:
                    log.warning("could not stop the stream: %s", exc.response.get("error", exc))

    async def _send(self, chunk: str) -> None:
        if self._mode == "stream":
            try:
                if self._stream is None:
                    self._stream = await self._client.chat_stream(
                        channel=self._channel,
                        thread_ts=self._thread_ts,
                        buffer_size=1,
                        recipient_team_id=self._team_id or None,
                        recipient_user_id=self._user_id or None,
                    )
                await self._stream.append(markdown_text=chunk)
                self._text += chunk
                return
            except SlackApiError as exc:
                self._fall_back(exc)
        self._text += chunk
        text = self._text if len(self._text) <= UPDATE_MAX else "…" + self._text[-UPDATE_MAX:]
        try:
            if self._fallback_ts is None:
                resp = await self._client.chat_postMessage(
                    channel=self._channel, thread_ts=self._thread_ts, text=text, mrkdwn=True
                )
                self._fallback_ts = str(resp["ts"])
            else:
                await self._client.chat_update(channel=self._channel, ts=self._fallback_ts, text=text)
        except SlackApiError as exc:  # progress is a courtesy: the verdict still arrives
            log.warning("progress update failed: %s", exc.response.get("error", exc))

    def _fall_back(self, exc: SlackApiError) -> None:
        log.info("chat streaming unavailable (%s): updating one message instead", exc.response.get("error", exc))
        self._mode = "update"
        if self._stream is not None and self._stream.ts:  # continue the message the stream started
            self._fallback_ts = self._stream.ts
