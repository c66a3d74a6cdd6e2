"""Alertmanager's webhook payload (version 4), as Alertmanager builds it, for tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def alert(
    labels: dict[str, str], *, starts: float, ends: float | None = None, status: str = "firing", summary: str = ""
) -> dict[str, Any]:
    return {
        "status": status,
        "labels": labels,
        "annotations": {"summary": summary} if summary else {},
        "startsAt": rfc3339(starts),
        "endsAt": rfc3339(ends) if ends else "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": f"{abs(hash(json.dumps(labels, sort_keys=True))):016x}",
    }


def notification(group: dict[str, str], alerts: list[dict[str, Any]], *, status: str = "firing") -> bytes:
    common = {k: v for k, v in alerts[0]["labels"].items() if all(a["labels"].get(k) == v for a in alerts)}
    key = "{}:{" + ",".join(f'{k}="{v}"' for k, v in sorted(group.items())) + "}"
    return json.dumps(
        {
            "version": "4",
            "groupKey": key,
            "truncatedAlerts": 0,
            "status": status,
            "receiver": "rcabot",
            "groupLabels": group,
            "commonLabels": common,
            "commonAnnotations": alerts[0]["annotations"],
            "externalURL": "http://alertmanager:9093",
            "alerts": alerts,
        }
    ).encode()
