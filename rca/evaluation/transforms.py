"""Telemetry as another system would have recorded the same incident.

Each transform wraps the incident's sources, so an engine reads them as it reads any backend:

- `Cropped`: the recording begins at a moment (a new pod, a restarted exporter, a scrape gap):
  nothing before it is read, from any modality.
- `Resampled`: metrics at another step. A grid point holds the mean of the samples since the
  previous one (what a rate over a coarser step reports), or, where none fell there, the last
  sample before it (what a finer scrape of an unchanged series reads).
- `Renamed` (rca.evaluation.vocabulary): metric names in another exporter's vocabulary.
- `Fleet`: idle services beside the real ones, whose series are noise around a level of their
  own.

Every draw comes from a hash of the case id and the name it concerns, so every run and every
engine sees the same telemetry, and a sample's value does not depend on the window asked.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rca.errors import InputError
from rca.evaluation.vocabulary import Renamed, Vocabulary
from rca.model import Incident, Normal, Sources
from rca.signals import Signal, signal_of
from rca.sources.protocols import (
    LogQuery,
    LogSource,
    MetricQuery,
    MetricSource,
    SpanQuery,
    TraceSource,
)
from rca.telemetry import LogRecord, Series, Span, Window


def _clip(window: Window, since: float) -> Window | None:
    """The part of a window from `since` on, or None when nothing of it is left."""
    start = max(window.start, since)
    return Window(start, window.end) if window.end > start else None


@dataclass(frozen=True, slots=True)
class CroppedMetrics:
    inner: MetricSource
    since: float

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        window = _clip(query.window, self.since)
        return [] if window is None else await self.inner.series(replace(query, window=window))


@dataclass(frozen=True, slots=True)
class CroppedLogs:
    inner: LogSource
    since: float

    async def records(self, query: LogQuery) -> list[LogRecord]:
        window = _clip(query.window, self.since)
        return [] if window is None else await self.inner.records(replace(query, window=window))


@dataclass(frozen=True, slots=True)
class CroppedTraces:
    inner: TraceSource
    since: float

    async def spans(self, query: SpanQuery) -> Sequence[Span]:
        window = _clip(query.window, self.since)
        return [] if window is None else await self.inner.spans(replace(query, window=window))


def cropped(sources: Sources, since: float) -> Sources:
    """The sources of a recording that begins at `since` (the call graph as it was)."""
    return Sources(
        metrics=CroppedMetrics(sources.metrics, since) if sources.metrics is not None else None,
        logs=CroppedLogs(sources.logs, since) if sources.logs is not None else None,
        traces=CroppedTraces(sources.traces, since) if sources.traces is not None else None,
        topology=sources.topology,
    )


def resample(series: Series, step: float) -> Series:
    """One series on the grid of multiples of `step` within its span: each point the mean of
    the finite samples in (point - step, point], else the last finite sample before it."""
    t, v = series.timestamps.astype(float), series.values.astype(float)
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if t.size == 0:
        return Series(series.entity, series.metric, np.array([]), np.array([]), series.instance)
    grid = np.arange(math.ceil(t[0] / step) * step, t[-1] + step, step)
    grid = grid[grid <= t[-1] + step - 1e-9]
    # samples in (g - step, g]: indices [lo, hi)
    lo = np.searchsorted(t, grid - step, side="right")
    hi = np.searchsorted(t, grid, side="right")
    count = hi - lo
    filled = count > 0
    sums = np.zeros(grid.size)
    if filled.any():  # bins tile the samples, so each sum is its own bin's, added in order
        sums[filled] = np.add.reduceat(v, lo[filled])
    mean = np.divide(sums, count, out=np.zeros(grid.size), where=filled)
    held = v[np.maximum(hi - 1, 0)]  # the last sample at or before the point
    values = np.where(count > 0, mean, held)
    keep = hi > 0  # nothing sampled yet: no point
    return Series(series.entity, series.metric, grid[keep], values[keep], series.instance)


@dataclass(frozen=True, slots=True)
class Resampled:
    inner: MetricSource
    step: float

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        out = []  # a point averages the step before it: read that step too
        wider = replace(query, window=Window(query.window.start - self.step, query.window.end))
        for s in await self.inner.series(wider):
            r = resample(s, self.step).between(query.window)
            if len(r):
                out.append(r)
        return out


def _unit(key: str, n: np.ndarray) -> np.ndarray:
    """Uniform draws in (0, 1), one per integer of `n`, fixed by `key` (a counter-based hash:
    the same sample gets the same draw whichever window asks for it)."""
    seed = np.uint64(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
    with np.errstate(over="ignore"):
        x = n.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + seed
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


@dataclass(frozen=True, slots=True)
class Fleet:
    """`size` idle services beside the inner source's: each has the metrics a real entity has,
    as gaussian noise of 5 % around a level of its own, at the real series' sampling times."""

    inner: MetricSource
    size: int
    key: str  # the case id: another case, another fleet

    def names(self) -> tuple[str, ...]:
        return tuple(f"idle-{i:04d}-service" for i in range(self.size))

    async def entities(self) -> tuple[str, ...]:
        return (*await self.inner.entities(), *self.names())

    async def series(self, query: MetricQuery) -> list[Series]:
        wanted = [n for n in self.names() if not query.entities or n in query.entities]
        real_query = (
            query
            if not query.entities
            else replace(query, entities=tuple(e for e in query.entities if e not in set(self.names())))
        )
        real = await self.inner.series(real_query) if not query.entities or real_query.entities else []
        if not wanted:
            return real
        template = real or await self.inner.series(replace(query, entities=()))
        if not template:
            return real
        first = template[0].entity
        shapes = [s for s in template if s.entity == first]  # one entity's metrics and sampling
        return real + [self._noise(name, s) for name in wanted for s in shapes]

    def _noise(self, entity: str, shape: Series) -> Series:
        key = f"{self.key}/{entity}/{shape.metric}"
        level = 1.0 + 99.0 * float(_unit(key, np.array([0]))[0])
        ticks = np.round(shape.timestamps.astype(float)).astype(np.int64)
        u1, u2 = _unit(key + "/a", ticks), _unit(key + "/b", ticks)
        gauss = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)
        return Series(entity, shape.metric, shape.timestamps, level * (1.0 + 0.05 * gauss), shape.instance)


def reshaped(
    incident: Incident, *, step: float | None = None, vocabulary: Vocabulary | None = None, fleet: int = 0
) -> Incident:
    """The incident's metrics (and their normals') resampled, renamed and beside an idle fleet."""
    if step is None and vocabulary is None and not fleet:
        return incident

    def wrap(src: MetricSource | None) -> MetricSource | None:
        if src is None:
            return None
        if step is not None:
            src = Resampled(src, step)
        if vocabulary is not None:
            src = Renamed(src, vocabulary)
        if fleet:
            src = Fleet(src, fleet, str(incident.id))
        return src

    return _map_metrics(
        incident,
        wrap,
        note=", ".join(
            filter(
                None,
                (
                    f"metrics resampled to {step:g}s" if step is not None else "",
                    f"metric names in the {vocabulary.value} vocabulary" if vocabulary is not None else "",
                    f"{fleet} idle services added" if fleet else "",
                ),
            )
        ),
    )


_DRIFTING = frozenset({Signal.CPU, Signal.MEMORY, Signal.DISK, Signal.NETWORK})


@dataclass(frozen=True, slots=True)
class Drifted:
    """The inner source's resource series (CPU, memory, disk, network), each at its own level:
    scaled by a factor within `fraction` of 1, drawn per series from `key`. What a process holds
    (a heap, a cache, a CPU baseline) differs from run to run; a ratio such as availability or
    an error rate does not drift with it."""

    inner: MetricSource
    fraction: float
    key: str

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        out = []
        for s in await self.inner.series(query):
            if signal_of(s.metric) not in _DRIFTING:
                out.append(s)
                continue
            u = float(_unit(f"{self.key}/{s.entity}/{s.metric}/{s.instance}", np.array([0]))[0])
            out.append(replace(s, values=s.values * (1.0 + self.fraction * (2.0 * u - 1.0))))
        return out


def drifted(incident: Incident, fraction: float) -> Incident:
    """The incident with its normal behaviour read as if recorded in another run: every normal
    resource series (look-back and fault-free stretch) at a level within `fraction` of its own,
    drawn per series from the case id; the window itself as recorded."""
    if not fraction:
        return incident
    key = f"drift/{incident.id}"

    def sources(s: Sources) -> Sources:
        return replace(s, metrics=Drifted(s.metrics, fraction, key)) if s.metrics is not None else s

    normal = {
        m: replace(n, sources=sources(n.sources), fault_free=sources(n.fault_free) if n.fault_free else None)
        for m, n in incident.normal.items()
    }
    note = f"normal resource metrics read at levels up to {fraction:.0%} from their own, as another run's"
    return replace(incident, normal=normal, notes=(*incident.notes, note))


def parse_drift(text: str) -> float:
    """A drift fraction from the command line (0.2 or 20%), in [0, 1)."""
    try:
        value = float(text.strip().removesuffix("%")) / (100.0 if text.strip().endswith("%") else 1.0)
    except ValueError:
        raise InputError(f"drift {text!r} is not a fraction such as 0.2 or 20%") from None
    if not 0.0 <= value < 1.0:
        raise InputError(f"drift {text!r} must lie in [0, 1): a level moved by all of itself is no level")
    return value


def _map_metrics(
    incident: Incident, wrap: Callable[[MetricSource | None], MetricSource | None], *, note: str
) -> Incident:
    """Every metric source of the incident (its own and its normals') through `wrap`, each
    distinct source wrapped once."""
    done: dict[int, MetricSource | None] = {}

    def once(src: MetricSource | None) -> MetricSource | None:
        if src is None:
            return None
        if id(src) not in done:
            done[id(src)] = wrap(src)
        return done[id(src)]

    def sources(s: Sources) -> Sources:
        return replace(s, metrics=once(s.metrics))

    normal = {
        m: replace(n, sources=sources(n.sources), fault_free=sources(n.fault_free) if n.fault_free else None)
        for m, n in incident.normal.items()
    }
    return replace(incident, sources=sources(incident.sources), normal=normal, notes=(*incident.notes, note))


def parse_step(text: str) -> float:
    """`5s`, `60s`, `1m` -> seconds."""
    units = {"s": 1.0, "m": 60.0}
    t = text.strip().lower()
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except (KeyError, ValueError):
        raise InputError(f"cannot read the step {text!r}: give seconds (5s, 60s) or minutes (1m)") from None
    if not value > 0:
        raise InputError(f"the step must be positive, got {text!r}")
    return value


def crop(incident: Incident, since: float) -> Incident:
    """The incident as a recording that begins at `since` would give it: its sources and its
    look-back normals read nothing before then; a stretch recorded apart (fault_free) stays."""
    sources = cropped(incident.sources, since)
    normal = {m: Normal(n.window, cropped(n.sources, since), n.fault_free) for m, n in incident.normal.items()}
    return replace(
        incident,
        sources=sources,
        normal=normal,
        notes=(*incident.notes, "the recording begins at the fault: nothing before it is read"),
    )
