"""Changes read from the Prometheus series that record them, through the same HTTP API the
metrics come from:

- kube-state-metrics' `kube_pod_container_info`: a container's `image` label that changes is a
  deploy, from the old image's tag to the new one's;
- `kube_deployment_spec_replicas`: a replica count that moves is a scaling;
- Argo CD's `argocd_app_info`: a `revision` label that changes is a deploy of the application;
- `process_start_time_seconds` (every Prometheus client exports it): a start time that moves
  is a restart, at the new start time.

Each is read over the window asked (and the hour before), with the service named by a label of
its own; a series Prometheus does not hold is no change, and a backend that fails says so.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from rca.changes import LOOK_BACK, Change, ChangeKind
from rca.errors import DataError
from rca.sources import http
from rca.telemetry import Window


@dataclass(frozen=True, slots=True)
class ChangeSeries:
    """A series family that records a kind of change."""

    query: str  # PromQL, no label matchers added
    kind: ChangeKind
    service_label: str  # the label naming the service it changed
    version_label: str = ""  # a label whose value is the version; "" where the sample value is


CHANGE_SERIES = (
    ChangeSeries("kube_pod_container_info", ChangeKind.DEPLOY, "container", "image"),
    ChangeSeries("kube_deployment_spec_replicas", ChangeKind.SCALE, "deployment"),
    ChangeSeries("argocd_app_info", ChangeKind.DEPLOY, "name", "revision"),
    ChangeSeries("process_start_time_seconds", ChangeKind.RESTART, "service"),
)


class PrometheusChanges:
    """A change source over a Prometheus HTTP API."""

    what = "the changes Prometheus records"

    def __init__(
        self, url: str, *, step: float = 15.0, timeout: float = 10.0, families: tuple[ChangeSeries, ...] = CHANGE_SERIES
    ) -> None:
        self.url = url.rstrip("/")
        self.step = step
        self.timeout = timeout
        self.families = families

    async def changes(self, window: Window) -> list[Change]:
        """The changes these series record from an hour before the window to its end."""
        span = Window(window.start - LOOK_BACK, window.end)
        async with http.session(self.timeout) as client:
            parts = await asyncio.gather(*(self._family(client, f, span) for f in self.families))
        found = {(c.service, c.kind, c.time, c.after): c for part in parts for c in part}
        return sorted(found.values(), key=lambda c: (c.time, c.service))

    async def _family(self, client: Any, family: ChangeSeries, span: Window) -> list[Change]:
        params = {
            "query": family.query,
            "start": f"{span.start:.3f}",
            "end": f"{span.end:.3f}",
            "step": f"{self.step:g}s",
        }
        body = await http.get_json(
            client,
            self.url + "/api/v1/query_range",
            params,
            who=f"prometheus at {self.url}",
            what=family.query,
            ok=http.status_success,
        )
        data = body.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise DataError(f"prometheus at {self.url}: {family.query}: expected a matrix result")
        # a version label: per service, when each version's first series began; a value: per series
        tracks: dict[tuple[str, str], list[tuple[float, str]]] = {}
        for item in data.get("result", []):
            labels = item.get("metric", {})
            service = str(labels.get(family.service_label, ""))
            samples = [(float(t), str(v)) for t, v in item.get("values", [])]
            if not service or not samples:
                continue
            if family.version_label:
                version = str(labels.get(family.version_label, ""))
                if version:
                    tracks.setdefault((service, ""), []).append((samples[0][0], version))
            else:
                tracks[(service, repr(sorted(labels.items())))] = samples
        out = []
        for (service, _), points in tracks.items():
            points.sort()
            opened = points[0][0]  # versions seen together when the read began are no change
            for (_, before), (t, after) in zip(points, points[1:], strict=False):
                if after != before and t > opened:
                    at = float(after) if family.kind is ChangeKind.RESTART else t
                    out.append(
                        Change(
                            service,
                            family.kind,
                            at,
                            _short(before, family),
                            _short(after, family),
                            "",
                            "",
                            "prometheus",
                        )
                    )
        return out


def _short(version: str, family: ChangeSeries) -> str:
    """An image's tag (`shop/orders:1.4.3` -> `1.4.3`), a revision's first 12 characters, a
    number as written (a start time: empty, the change's time says it)."""
    if family.kind is ChangeKind.RESTART:
        return ""
    if family.version_label == "image":
        return version.rsplit("/", 1)[-1].split(":", 1)[-1][:60]
    if family.version_label:
        return version[:12]
    return f"{float(version):g}"
