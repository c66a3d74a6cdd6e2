"""Alertmanager's webhook payload (version 4), parsed once into typed values or refused with a
reason. Everything in it is hostile until parsed: sizes are capped, every label is a short
string, times are RFC 3339."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import quote

from aiohttp import web

from handlers.fields import json_object, rfc3339, text, web_link
from handlers.webhooks import json_webhook
from rca.errors import InputError

MAX_BODY = 1024 * 1024  # bytes; Alertmanager's own default cap on a group is far below this
MAX_ALERTS = 1000
MAX_LABELS = 64
MAX_VALUE = 1024


@dataclass(frozen=True, slots=True)
class Alert:
    status: str  # firing | resolved
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: float
    ends_at: float | None  # None while firing (Alertmanager sends year 1)
    fingerprint: str
    generator_url: str = ""  # the graph of the expression that fired (http(s) only, else empty)


@dataclass(frozen=True, slots=True)
class Notification:
    status: str  # firing | resolved: of the group as a whole
    group_key: str
    receiver: str
    group_labels: dict[str, str]
    common_labels: dict[str, str]
    common_annotations: dict[str, str]
    alerts: tuple[Alert, ...]
    truncated: int
    external_url: str = ""  # the Alertmanager that sent it (http(s) only, else empty): where to silence

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "")

    @property
    def graph_url(self) -> str:
        return next((a.generator_url for a in self.alerts if a.generator_url), "")

    @property
    def runbook_url(self) -> str:
        notes = self.common_annotations or (self.alerts[0].annotations if self.alerts else {})
        return web_link(notes.get("runbook_url", ""))

    @property
    def silence_url(self) -> str:
        """Alertmanager's page for a new silence matching the group's labels."""
        if not self.external_url:
            return ""
        matchers = ",".join(f'{k}="{v}"' for k, v in sorted(self.group_labels.items()))
        return f"{self.external_url.rstrip('/')}/#/silences/new?filter={quote('{' + matchers + '}', safe='')}"

    @property
    def labels(self) -> dict[str, str]:
        """What every alert of the group shares, else the first alert's labels."""
        return self.common_labels or (self.alerts[0].labels if self.alerts else self.group_labels)

    @property
    def fired(self) -> float:
        return min(a.starts_at for a in self.alerts)

    @property
    def summary(self) -> str:
        """The annotation a person wrote for this alert (summary, then description), else its name."""
        notes = self.common_annotations or (self.alerts[0].annotations if self.alerts else {})
        return notes.get("summary") or notes.get("description") or self.labels.get("alertname", "alert")


def parse_notification(body: bytes) -> Notification:
    data = json_object(body, MAX_BODY)
    if str(data.get("version")) != "4":
        raise InputError(f"webhook version {str(data.get('version'))[:10]!r}; rcabot reads version 4")
    status = _status(data.get("status"), "status")
    key = data.get("groupKey")
    if not isinstance(key, str) or not key or len(key) > 4096:
        raise InputError("groupKey must be a non-empty string")
    alerts = data.get("alerts")
    if not isinstance(alerts, list) or not alerts or len(alerts) > MAX_ALERTS:
        raise InputError(f"alerts must be a list of 1 to {MAX_ALERTS}")
    truncated = data.get("truncatedAlerts", 0)
    return Notification(
        status=status,
        group_key=key,
        receiver=text(data.get("receiver", ""), "receiver"),
        group_labels=_labels(data.get("groupLabels"), "groupLabels"),
        common_labels=_labels(data.get("commonLabels"), "commonLabels"),
        common_annotations=_labels(data.get("commonAnnotations"), "commonAnnotations", long=True),
        alerts=tuple(_alert(a, i) for i, a in enumerate(alerts)),
        truncated=truncated if isinstance(truncated, int) and truncated >= 0 else 0,
        external_url=web_link(text(data.get("externalURL", ""), "externalURL")),
    )


def _alert(a: object, i: int) -> Alert:
    if not isinstance(a, dict):
        raise InputError(f"alerts[{i}] is not an object")
    ends = rfc3339(a.get("endsAt"), f"alerts[{i}].endsAt", optional=True)
    return Alert(
        status=_status(a.get("status"), f"alerts[{i}].status"),
        labels=_labels(a.get("labels"), f"alerts[{i}].labels"),
        annotations=_labels(a.get("annotations"), f"alerts[{i}].annotations", long=True),
        starts_at=rfc3339(a.get("startsAt"), f"alerts[{i}].startsAt"),  # type: ignore[arg-type]
        ends_at=ends if ends is not None and ends > 0 else None,
        fingerprint=text(a.get("fingerprint", ""), f"alerts[{i}].fingerprint"),
        generator_url=web_link(text(a.get("generatorURL", ""), f"alerts[{i}].generatorURL")),
    )


def _status(value: object, where: str) -> str:
    if value not in ("firing", "resolved"):
        raise InputError(f"{where} must be firing or resolved")
    return str(value)


def _labels(value: object, where: str, *, long: bool = False) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_LABELS:
        raise InputError(f"{where} must be an object of at most {MAX_LABELS} strings")
    return {
        text(k, where, limit=200): text(v, f"{where}.{str(k)[:40]}", limit=8 * MAX_VALUE if long else MAX_VALUE)
        for k, v in value.items()
    }


def alertmanager_webhook(
    accepted: tuple[str, ...], take: Callable[[Notification], None]
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """Alertmanager's webhook route: authenticated against the `accepted` Authorization
    headers (none: it is off), capped, parsed, answered at once; `take` does the work after."""
    return json_webhook(accepted, parse_notification, take, max_body=MAX_BODY)
