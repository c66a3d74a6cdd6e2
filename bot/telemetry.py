"""Where the bot reads telemetry from: a recorded dataset replayed as if live (the default).

Live backends implement the same small interface, so the desk never knows which it reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Protocol

from rca.errors import DataError, InputError
from rca.model import CaseId, Incident, IncidentCase, Modality, Normal, Sources, Window
from rca.replay import known_entities, nearest_case, replay_incident, suggest
from rca.sources.datasets import find_cases
from rca.sources.prometheus import PrometheusMetrics, load_mapping
from rca.windows import parse_window

log = logging.getLogger("rcabot.telemetry")


def embedded_data() -> Path:
    """The embedded slice of one TrainTicket incident (Nezha's data, MIT licence)."""
    return Path(str(resources.files("bot") / "demo"))


class Telemetry(Protocol):
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
        self._cases: Sequence[IncidentCase] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> Sequence[IncidentCase]:
        async with self._lock:
            if self._cases is None:
                cases = await asyncio.to_thread(find_cases, self.data)
                if not cases:
                    raise InputError(f"no recorded incidents under {self.data}")
                self._cases = cases
        return self._cases

    async def now(self) -> float:
        cases = await self._load()
        return self._now if self._now is not None else max(c.incident.window.end for c in cases)

    async def window(self, text: str) -> Window:
        return parse_window(text, now=await self.now())

    async def services(self) -> tuple[str, ...]:
        cases = await self._load()
        return await known_entities(nearest_case(cases, Window(await self.now() - 1, await self.now())).incident)

    async def incident(self, service: str, window: Window) -> Incident:
        return await replay_incident(await self._load(), symptom=service, window=window)


@dataclass(frozen=True, slots=True)
class LiveConfig:
    """Live backends; each one present replaces that modality of the replayed data (if any)."""

    prometheus_url: str = ""
    prom_mapping: Path | None = None
    timeout: float = 10.0  # per backend query

    @property
    def any(self) -> bool:
        return bool(self.prometheus_url)


NORMAL_LOOKBACK = 3600.0  # the hour before the window is the normal period of a live backend


class LiveTelemetry:
    """Live backends over an optional recorded base (which supplies what the backends do not)."""

    def __init__(self, live: LiveConfig, *, base: ReplayTelemetry | None = None, now: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.live = live
        self.base = base
        self._now = now
        self._clock = clock
        self.metrics = (PrometheusMetrics(live.prometheus_url, load_mapping(live.prom_mapping), timeout=live.timeout)
                        if live.prometheus_url else None)  # fmt: skip

    async def now(self) -> float:
        if self._now is not None:
            return self._now
        return await self.base.now() if self.base is not None else self._clock()

    async def window(self, text: str) -> Window:
        return parse_window(text, now=await self.now())

    async def services(self) -> tuple[str, ...]:
        names: set[str] = set(await self.base.services()) if self.base is not None else set()
        if self.metrics is not None:
            try:
                names.update(await self.metrics.entities())
            except DataError as exc:  # discovery is best effort: the base or the topology still name services
                log.warning("service discovery failed: %s", exc)
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
            sources = replace(sources, metrics=self.metrics)
            normal[Modality.METRICS] = Normal(lookback, Sources(metrics=self.metrics))
        return replace(incident, sources=sources, normal=normal)


def telemetry_from(*, data: Path | None, now: float | None, live: LiveConfig) -> Telemetry:
    """The telemetry a configuration names: live backends, a recorded dataset, or both; the
    embedded incident when neither is given."""
    if not live.any:
        return ReplayTelemetry(data or embedded_data(), now=now)
    return LiveTelemetry(live, base=ReplayTelemetry(data, now=now) if data else None, now=now)
