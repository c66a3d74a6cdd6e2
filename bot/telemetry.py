"""Where the bot reads telemetry from: a recorded dataset replayed as if live (the default).

Live backends implement the same small interface, so the desk never knows which it reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Protocol

from bot.config import LiveConfig
from rca.errors import DataError, InputError
from rca.model import CaseId, Incident, Modality, Normal, Sources
from rca.replay import known_entities, nearest, replay_incident, suggest
from rca.sources.datasets import find_recordings
from rca.sources.jaeger import JaegerTraces, OtlpFiles, TraceTopology, topology_file
from rca.sources.logfiles import LogDirectory
from rca.sources.loki import LokiLogs
from rca.sources.memory import StaticTopology
from rca.sources.prometheus import LookedBack, PrometheusMetrics, load_mapping
from rca.telemetry import Window
from rca.windows import parse_window

log = logging.getLogger("rcabot.telemetry")


def embedded_data() -> Path:
    """The embedded slice of one TrainTicket incident (Nezha's data, MIT licence)."""
    return Path(str(resources.files("bot") / "demo"))


class Telemetry(Protocol):
    async def now(self) -> float:
        """This telemetry's present (a replay's lies inside its recording)."""
        ...

    async def services(self) -> tuple[str, ...]:
        """Every service an investigation may name."""
        ...

    async def window(self, text: str) -> Window:
        """The window a request's text means, relative to this telemetry's "now"."""
        ...

    async def incident(self, service: str, window: Window) -> Incident:
        """An incident for `service` over `window`; InputError for an unknown service."""
        ...


class ReplayTelemetry:
    """A recorded dataset read as if it were live, "now" anchored inside it."""

    def __init__(self, data: Path, *, now: float | None = None) -> None:
        self.data = data
        self._now = now
        self._recordings: Sequence[Incident] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> Sequence[Incident]:
        async with self._lock:
            if self._recordings is None:
                found = await asyncio.to_thread(find_recordings, self.data)
                if not found:
                    raise InputError(f"no recorded incidents under {self.data}")
                self._recordings = found
        return self._recordings

    async def now(self) -> float:
        recordings = await self._load()
        return self._now if self._now is not None else max(r.window.end for r in recordings)

    async def window(self, text: str) -> Window:
        return parse_window(text, now=await self.now())

    async def services(self) -> tuple[str, ...]:
        now = await self.now()
        return await known_entities(nearest(await self._load(), Window(now - 1, now)))

    async def incident(self, service: str, window: Window) -> Incident:
        return await replay_incident(await self._load(), symptom=service, window=window)


NORMAL_LOOKBACK = 3600.0
SERVICES_TTL = (
    60.0  # seconds service discovery is reused  # the hour before the window is the normal period of a live backend
)


class LiveTelemetry:
    """Live backends over an optional recorded base (which supplies what the backends do not)."""

    def __init__(
        self,
        live: LiveConfig,
        *,
        base: ReplayTelemetry | None = None,
        now: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.live = live
        self.base = base
        self._now = now
        self._clock = clock
        self.metrics = (
            PrometheusMetrics(live.prometheus_url, load_mapping(live.prom_mapping), timeout=live.timeout)
            if live.prometheus_url
            else None
        )
        self.logs: LokiLogs | LogDirectory | None = None
        if live.loki_url:
            self.logs = LokiLogs(live.loki_url, label=live.loki_label, timeout=live.timeout)
        elif live.log_dir is not None:
            self.logs = LogDirectory(live.log_dir)
        self.traces: JaegerTraces | OtlpFiles | None = None
        if live.jaeger_url:
            self.traces = JaegerTraces(live.jaeger_url, timeout=live.timeout)
        elif live.otlp is not None:
            self.traces = OtlpFiles(live.otlp)
        self.graph = StaticTopology(topology_file(live.topology)) if live.topology is not None else None
        self._services: tuple[float, tuple[str, ...]] | None = None  # (read at, names)
        self._metric_names: tuple[str, ...] | None = None  # the services Prometheus named at discovery

    async def now(self) -> float:
        if self._now is not None:
            return self._now
        return await self.base.now() if self.base is not None else self._clock()

    async def window(self, text: str) -> Window:
        return parse_window(text, now=await self.now())

    async def services(self) -> tuple[str, ...]:
        """Every service the backends name, asked at most once a minute (each /rca checks it)."""
        if self._services is None or self._clock() - self._services[0] > SERVICES_TTL:
            self._services = (self._clock(), await self._discover())
        return self._services[1]

    async def _discover(self) -> tuple[str, ...]:
        names: set[str] = set(await self.base.services()) if self.base is not None else set()
        self._metric_names = None

        async def metric_names(source: PrometheusMetrics) -> tuple[str, ...]:
            self._metric_names = await source.entities()
            return self._metric_names

        finders = [
            metric_names(self.metrics) if self.metrics else None,
            self.logs.entities() if self.logs else None,
            self.traces.services() if self.traces is not None else None,
        ]
        for found in asyncio.as_completed([f for f in finders if f is not None]):
            try:
                names.update(await found)
            except DataError as exc:  # discovery is best effort: other backends still name services
                log.warning("service discovery failed: %s", exc)
        if self.graph is not None:
            names.update(str(n) for n in (await self.graph.topology()).nodes)
        return tuple(sorted(names))

    async def incident(self, service: str, window: Window) -> Incident:
        if self.base is not None:
            incident = await self.base.incident(service, window)
        else:
            known = await self.services()
            if service not in known:
                raise InputError(f"unknown service {service!r}.{suggest(service, known)}")
            incident = Incident(CaseId(f"live/{service}/{window.to_iso()}"), "live", service, window, Sources())
        lookback = Window(window.start - NORMAL_LOOKBACK, window.start)
        sources, normal = incident.sources, dict(incident.normal)
        if self.metrics is not None:
            # one query per metric reads both; the services just discovered are not asked again
            metrics = LookedBack(self.metrics, window, lookback, entities=self._metric_names)
            sources = replace(sources, metrics=metrics)
            normal[Modality.METRICS] = Normal(lookback, Sources(metrics=metrics))
        if self.logs is not None:
            sources = replace(sources, logs=self.logs)
            normal[Modality.LOGS] = Normal(lookback, Sources(logs=self.logs))
        if self.traces is not None:
            sources = replace(sources, traces=self.traces)
            normal[Modality.TRACES] = Normal(lookback, Sources(traces=self.traces))
            if self.graph is None:
                sources = replace(sources, topology=TraceTopology(self.traces, Window(lookback.start, window.end)))
        if self.graph is not None:
            sources = replace(sources, topology=self.graph)
        return replace(incident, sources=sources, normal=normal)


def telemetry_from(*, data: Path | None, now: float | None, live: LiveConfig) -> Telemetry:
    """The telemetry a configuration names: live backends, a recorded dataset, or both; the
    embedded incident when neither is given."""
    if not live.any:
        return ReplayTelemetry(data or embedded_data(), now=now)
    return LiveTelemetry(live, base=ReplayTelemetry(data, now=now) if data else None, now=now)
