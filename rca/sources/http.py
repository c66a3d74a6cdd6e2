"""The one way live sources read JSON over HTTP: bounded sessions, every failure a DataError
that names the backend and the query."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp

from rca.errors import DataError


def session(timeout: float) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))


async def get_json(
    client: aiohttp.ClientSession,
    url: str,
    params: dict[str, str],
    *,
    who: str,
    what: str,
    ok: Callable[[int, Any], str | None],
) -> Any:
    """GET url and its JSON body; `ok(status, body)` names what is wrong with an answer, or None."""
    try:
        async with client.get(url, params=params) as response:
            body = await response.json(content_type=None)
            status = response.status
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise DataError(f"{who}: {what[:120]}: {type(exc).__name__} {exc}".strip()) from exc
    problem = ok(status, body)
    if problem is not None:
        raise DataError(f"{who}: {what[:120]}: HTTP {status} {problem[:200]}")
    return body


def status_success(status: int, body: Any) -> str | None:
    """Prometheus' and Loki's envelope: {"status": "success", "data": ...}."""
    if status == 200 and isinstance(body, dict) and body.get("status") == "success":
        return None
    if isinstance(body, dict):
        return str(body.get("error") or body.get("message") or "no success status")
    return "not JSON"
