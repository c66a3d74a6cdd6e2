"""A JSON webhook route: authenticated against the accepted Authorization headers (none: the
route is off), its body capped, parsed once, answered at once; the work is done after."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

from rca.errors import InputError

T = TypeVar("T")


def json_webhook(
    accepted: tuple[str, ...], parse: Callable[[bytes], T], take: Callable[[T], None], *, max_body: int
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """401 without an accepted Authorization header, 413 past `max_body` bytes (declared or
    sent), 400 with the parser's reason for a body it refuses; else `take` gets what was parsed."""

    async def route(request: web.Request) -> web.Response:
        given = request.headers.get("Authorization", "")
        if not accepted or not any(hmac.compare_digest(given.encode(), a.encode()) for a in accepted):
            return web.json_response({"error": "unauthorized"}, status=401)
        if (request.content_length or 0) > max_body:
            return web.json_response({"error": f"payload over {max_body} bytes"}, status=413)
        body = await request.content.read(max_body + 1)
        if len(body) > max_body:  # a body sent without its length
            return web.json_response({"error": f"payload over {max_body} bytes"}, status=413)
        try:
            parsed = parse(body)
        except InputError as exc:
            return web.json_response({"error": str(exc)[:300]}, status=400)
        take(parsed)
        return web.json_response({"ok": True})

    return route
