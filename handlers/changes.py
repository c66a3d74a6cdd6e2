"""Changes posted to `POST /changes`, parsed once into a `Change` or refused with a reason.

Three shapes are read, each hostile until parsed (sizes capped, names checked, times RFC 3339,
links http(s) only):

- rcabot's deploy marker: `{"service": "orders", "kind": "deploy", "before": "1.4.2",
  "after": "1.4.3", "who": "ci", "link": "https://...", "time": "2026-12-04T09:00:00Z"}`
  (kind one of deploy, config, flag, scale, rollback; time optional: when it was received);
- GitHub's `deployment_status` event: a deployment whose status is `success` is a deploy of
  the deployment's `payload.service`, else of the repository, at the deployment's commit;
  other states are no change yet;
- an Argo CD notification webhook with the template in docs/changes.md: a sync whose phase
  is `Succeeded` is a deploy of the application (or of its `service`) at its revision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handlers.fields import json_object, rfc3339, text, web_link
from handlers.requests import SERVICE_NAME
from rca.changes import Change, ChangeKind
from rca.errors import InputError

MAX_BODY = 256 * 1024  # bytes; a GitHub event carries the whole repository object, about 10 KiB
MAX_VALUE = 200


def parse_change(body: bytes, *, now: Callable[[], float]) -> Change | None:
    """The change a payload records, None for one that records no change yet (a deployment
    still pending, a sync that failed); InputError for one that cannot be read."""
    data = json_object(body, MAX_BODY)
    if "deployment_status" in data:
        return _github(data)
    if "app" in data and "revision" in data:
        return _argocd(data, now)
    return _marker(data, now)


def _marker(data: dict[str, Any], now: Callable[[], float]) -> Change:
    kind = _text(data.get("kind", "deploy"), "kind").lower()
    try:
        known = ChangeKind(kind)
    except ValueError:
        raise InputError(f"kind {kind[:20]!r}; one of {', '.join(k.value for k in ChangeKind)}") from None
    return Change(
        service=_service(data.get("service"), "service"),
        kind=known,
        time=_time(data.get("time"), "time") if data.get("time") is not None else now(),
        before=_text(data.get("before", ""), "before"),
        after=_text(data.get("after", ""), "after"),
        who=_text(data.get("who", ""), "who"),
        link=web_link(_text(data.get("link", ""), "link", limit=2000)),
        source="marker",
    )


def _github(data: dict[str, Any]) -> Change | None:
    status, deployment, repo = (_object(data.get(k), k) for k in ("deployment_status", "deployment", "repository"))
    if status.get("state") != "success":
        return None
    payload = deployment.get("payload")
    named = payload.get("service") if isinstance(payload, dict) else None
    creator = _object(status.get("creator") or data.get("sender") or {}, "deployment_status.creator")
    link = next(
        (u for k in ("target_url", "environment_url", "log_url") if (u := web_link(str(status.get(k) or "")))), ""
    )
    return Change(
        service=_service(named if named is not None else repo.get("name"), "deployment.payload.service"),
        kind=ChangeKind.DEPLOY,
        time=_time(status.get("created_at"), "deployment_status.created_at"),
        after=_text(deployment.get("sha") or deployment.get("ref") or "", "deployment.sha")[:12],
        who=_text(creator.get("login", ""), "deployment_status.creator.login"),
        link=link or web_link(_text(repo.get("html_url", ""), "repository.html_url", limit=2000)),
        source="github",
    )


def _argocd(data: dict[str, Any], now: Callable[[], float]) -> Change | None:
    if str(data.get("phase", "Succeeded")) != "Succeeded":
        return None
    finished = data.get("finishedAt")
    return Change(
        service=_service(data.get("service") or data.get("app"), "app"),
        kind=ChangeKind.DEPLOY,
        time=_time(finished, "finishedAt") if finished else now(),
        after=_text(data.get("revision", ""), "revision")[:12],
        who=_text(data.get("who", "argocd") or "argocd", "who"),
        link=web_link(_text(data.get("url", ""), "url", limit=2000)),
        source="argocd",
    )


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{where} must be an object")
    return value


def _service(value: object, where: str) -> str:
    name = _text(value, where)
    if not SERVICE_NAME.match(name):
        raise InputError(f"{where} {name[:60]!r} is not a service name (letters, digits, '-', '_', '.', ':', '/')")
    return name


def _text(value: object, where: str, *, limit: int = MAX_VALUE) -> str:
    return text(value, where, limit=limit)


def _time(value: object, where: str) -> float:
    return rfc3339(value, where) or 0.0
