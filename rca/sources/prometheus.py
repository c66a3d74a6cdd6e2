"""Metrics from a live Prometheus: range queries over its HTTP API, one per mapped signal.

A mapping file (YAML) says which label names a service and an instance, and gives a PromQL
template per metric the engine reads; `${match}` in a template becomes the label matcher for
the services asked for. Every label value is escaped (and regex-quoted inside `=~`), so no
service name can change a query. Failures (unreachable, slow, an error answer) raise
DataError naming the query; the toolbox reports the modality as unavailable.

    service_label: service        # the label that names a service
    instance_label: pod           # the label that names an instance (optional)
    step: 15s                     # resolution of range queries
    metrics:
      CpuUsageRate(%): 100 * sum by (service, pod) (rate(container_cpu_usage_seconds_total{${match}}[1m]))
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import aiohttp
import numpy as np
import yaml

from rca.errors import DataError, MalformedFile
from rca.sources import http
from rca.sources.protocols import MetricQuery
from rca.telemetry import Series, Window
from rca.windows import parse_duration

_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


@dataclass(frozen=True, slots=True)
class PromMapping:
    service_label: str
    instance_label: str
    step: float
    metrics: Mapping[str, str]  # engine metric name -> PromQL template with ${match}


def load_mapping(path: Path | None = None) -> PromMapping:
    """A mapping file, or the defaults (cAdvisor, kube-state-metrics, OpenTelemetry HTTP)."""
    source = path if path is not None else resources.files("rca.sources") / "prometheus-defaults.yaml"
    where = str(path) if path is not None else "prometheus-defaults.yaml"
    try:
        doc = yaml.safe_load(source.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise MalformedFile(where, f"not a readable YAML mapping ({exc})") from exc
    return parse_mapping(doc, where=where)


def parse_mapping(doc: Any, *, where: str) -> PromMapping:
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict) or not doc["metrics"]:
        raise MalformedFile(where, "expected a mapping with a non-empty 'metrics' table")
    service, instance = str(doc.get("service_label", "service")), str(doc.get("instance_label", ""))
    for label in (service, instance):
        if label and not _LABEL.match(label):
            raise MalformedFile(where, f"{label!r} is not a Prometheus label name")
    metrics = {}
    for name, template in doc["metrics"].items():
        if not isinstance(template, str) or ("${match}" not in template and "${services}" not in template):
            raise MalformedFile(where, f"metric {name!r}: a PromQL template containing ${{match}} or ${{services}}")
        metrics[str(name)] = template.strip()
    step = parse_duration(str(doc.get("step", "15s")))
    return PromMapping(service, instance, step, metrics)


def escape_value(value: str) -> str:
    """A label value inside double quotes: backslash, quote and line breaks escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def services_regex(services: Sequence[str]) -> str:
    """The services as one regex (each name quoted), escaped for a double-quoted string."""
    if not services:
        return ".+"
    return escape_value("|".join(_RE2_SPECIAL.sub(r"\\\1", s) for s in services))


def matcher(label: str, services: Sequence[str]) -> str:
    """`label="a"`, `label=~"a|b"` (each value regex-quoted), or `label!=""` for all."""
    if not services:
        return f'{label}!=""'
    if len(services) == 1:
        return f'{label}="{escape_value(services[0])}"'
    return f'{label}=~"{services_regex(services)}"'


class PrometheusMetrics:
    """A MetricSource over a Prometheus HTTP API."""

    def __init__(self, url: str, mapping: PromMapping, *, timeout: float = 10.0, concurrency: int = 8) -> None:
        self.url = url.rstrip("/")
        self.mapping = mapping
        self.timeout = timeout
        self.concurrency = concurrency

    def promql(self, metric: str, services: Sequence[str]) -> str:
        """The query for one mapped metric over some services (all when empty)."""
        return Template(self.mapping.metrics[metric]).safe_substitute(
            match=matcher(self.mapping.service_label, services), services=services_regex(services)
        )

    async def entities(self) -> tuple[str, ...]:
        label = self.mapping.service_label
        data = await self._get(f"/api/v1/label/{label}/values", {}, what=f"label values of {label}")
        return tuple(sorted(str(v) for v in data if isinstance(v, str)))

    async def series(self, query: MetricQuery) -> list[Series]:
        wanted = [m for m in self.mapping.metrics if not query.metrics or m in query.metrics]
        limit = asyncio.Semaphore(self.concurrency)
        async with http.session(self.timeout) as client:

            async def one(metric: str) -> list[Series]:
                async with limit:
                    return await self._range(client, metric, query)

            parts = await asyncio.gather(*(one(m) for m in wanted))
        return [s for part in parts for s in part]

    async def _range(self, client: aiohttp.ClientSession, metric: str, query: MetricQuery) -> list[Series]:
        promql = self.promql(metric, query.entities)
        params = {
            "query": promql,
            "start": f"{query.window.start:.3f}",
            "end": f"{query.window.end:.3f}",
            "step": f"{self.mapping.step:g}s",
        }
        data = await self._get("/api/v1/query_range", params, what=promql, client=client)
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise DataError(f"prometheus at {self.url}: {promql[:120]}: expected a matrix result")
        out = []
        for item in data.get("result", []):
            labels = item.get("metric", {})
            entity = labels.get(self.mapping.service_label)
            if not entity:
                continue
            try:
                ts, vs = _samples(item.get("values", []))
            except (TypeError, ValueError) as exc:
                raise DataError(
                    f"prometheus at {self.url}: {promql[:120]}: a series whose samples are not [time, value] pairs"
                ) from exc
            out.append(Series(str(entity), metric, ts, vs, str(labels.get(self.mapping.instance_label, entity))))
        return out

    async def _get(
        self, path: str, params: dict[str, str], *, what: str, client: aiohttp.ClientSession | None = None
    ) -> Any:
        if client is None:
            async with http.session(self.timeout) as own:
                return await self._get(path, params, what=what, client=own)
        body = await http.get_json(
            client, self.url + path, params, who=f"prometheus at {self.url}", what=what, ok=http.status_success
        )
        return body.get("data")


class LookedBack:
    """One investigation's view of a Prometheus: its window and the look-back before it are
    read together, one range query per metric rather than two, and cut apart at the window's
    start. A range query holds both its ends, so each part keeps the sample at the start, as
    two reads would; with a look-back of whole steps the samples are the same. The services
    are asked once."""

    def __init__(
        self, source: PrometheusMetrics, window: Window, lookback: Window, *, entities: tuple[str, ...] | None = None
    ) -> None:
        if lookback.end != window.start:
            raise ValueError("the look-back must end where the window starts")
        self.source, self.window, self.lookback = source, window, lookback
        self._entities = entities  # the services, where just discovered; else asked once
        self._read: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Series]] = {}

    async def entities(self) -> tuple[str, ...]:
        if self._entities is None:
            self._entities = await self.source.entities()
        return self._entities

    async def series(self, query: MetricQuery) -> list[Series]:
        if query.window not in (self.window, self.lookback):
            return await self.source.series(query)
        key = (tuple(query.entities), tuple(query.metrics))
        if key not in self._read:
            both = Window(self.lookback.start, self.window.end)
            self._read[key] = await self.source.series(replace(query, window=both))
        cut = self.window.start
        out = []
        for s in self._read[key]:
            keep = s.timestamps >= cut if query.window == self.window else s.timestamps <= cut
            if keep.any():
                out.append(Series(s.entity, s.metric, s.timestamps[keep], s.values[keep], s.instance))
        return out


def _samples(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """A matrix result's `[[time, "value"], ...]` as two float arrays ("NaN", "+Inf" included;
    a value that is no number is NaN)."""
    try:
        pairs = np.asarray(values, dtype=object).reshape(-1, 2)
        return pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    except (TypeError, ValueError):
        ts = np.array([float(t) for t, _ in values], dtype=float)
        return ts, np.array([_number(v) for _, v in values], dtype=float)


def _number(value: Any) -> float:
    try:
        return float(value)  # Prometheus sends "NaN", "+Inf" as strings too
    except (TypeError, ValueError):
        return float("nan")
