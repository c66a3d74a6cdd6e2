"""Metric evidence: how far each series left its normal range, and when it left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rca.evidence.runs import ONSET_Z, place
from rca.signals import Signal, signal_of
from rca.telemetry import Series

# A deviation within this share of the median is treated as measurement noise. A level that
# a fault moves by a large share (memory held) gets a wider floor: a flat series drifting by a
# percent is housekeeping, not a leak.
_REL_FLOOR = 0.001
_REL_FLOOR_OF: dict[Signal, float] = {Signal.MEMORY: 0.02}
_MIN_NORMAL = 3
MAX_Z = 1e4  # beyond this a deviation from a flat baseline says nothing more


@dataclass(frozen=True, slots=True)
class MetricShift:
    entity: str
    metric: str
    instance: str
    signal: Signal
    score: float  # largest robust z of its run (rca.evidence.runs)
    onset: float | None  # when that run began
    direction: int
    normal_median: float
    peak: float
    profile: tuple[tuple[float, float], ...] = ()  # (time, robust z) across the window
    until: float | None = None  # when that run ended, where it is over before the window's end
    under_way: bool = False  # the run began at the first point read: it began before it


def level(normal: np.ndarray) -> tuple[float, float]:
    """A normal period's median and its own spread: 1.4826 MAD, or half the standard deviation
    when most of its points sit on one value; 0 for a series that never moved."""
    med = float(np.median(normal))
    return med, max(1.4826 * float(np.median(np.abs(normal - med))), 0.5 * float(np.std(normal)))


def robust_z(
    normal: np.ndarray,
    values: np.ndarray,
    rel_floor: float = _REL_FLOOR,
    unmoved: float = 0.0,
    at: tuple[float, float] | None = None,
) -> np.ndarray:
    """(x - median) / scale: scale is the normal's own spread, or for a normal that never
    moved, `unmoved` (its steadiest peer's, peer_spreads), floored at a thousandth of
    |median| (a series that never moved, like 100 % availability, makes a one-point drop stand
    out, not infinite). `at`: the normal's level, where it is already known."""
    med, own = at if at is not None else level(normal)
    scale = max(own if own > 0 else unmoved, rel_floor * abs(med), 1e-9)
    return np.clip((values - med) / scale, -MAX_Z, MAX_Z)


def own_normal(values: np.ndarray, rel_floor: float = _REL_FLOOR) -> np.ndarray:
    """Without a normal period, the points given (the window's first half: a window asked
    about an incident reaches back at least as far before it as it runs after it) less those
    that stand out against their own level (ONSET_Z): the median holds while departures are
    under half of the points, so an earlier fault there neither sets the level nor, once left
    out, widens the spread a departure is measured in."""
    calm = values[np.abs(robust_z(values, values, rel_floor)) < ONSET_Z]
    return calm if calm.size >= _MIN_NORMAL else values


def reference(normal: Series | None, now: Series) -> np.ndarray:
    """The normal values a window's series is measured against: its look-back, or where that
    holds too little of it, the window's first half less its own departures (own_normal)."""
    values = now.values[np.isfinite(now.values)]
    ref = normal.values[np.isfinite(normal.values)] if normal is not None else np.array([])
    if ref.size < _MIN_NORMAL and values.size:  # no normal period: the window's first half serves
        ref = own_normal(
            values[: max(_MIN_NORMAL, values.size // 2)], _REL_FLOOR_OF.get(signal_of(now.metric), _REL_FLOOR)
        )
    return ref


def shift_of(
    normal: Series | None,
    now: Series,
    *,
    unmoved: float = 0.0,
    ref: np.ndarray | None = None,
    at: tuple[float, float] | None = None,
) -> MetricShift | None:
    """The shift of one series against its normal part (`ref`, else `reference`; `at`: its
    level, where known); None when there is nothing to compare.

    Its evidence is the run going on when the window closes, or else its strongest run
    (rca.evidence.runs).
    """
    values, times = now.values, now.timestamps
    keep = np.isfinite(values)
    values, times = values[keep], times[keep]
    if values.size == 0:
        return None
    ref = reference(normal, now) if ref is None else ref
    at = level(ref) if at is None else at
    z = robust_z(ref, values, _REL_FLOOR_OF.get(signal_of(now.metric), _REL_FLOOR), unmoved, at)
    run = place(times, z)
    return MetricShift(
        entity=now.entity,
        metric=now.metric,
        instance=now.instance,
        signal=signal_of(now.metric),
        score=run.score,
        onset=run.onset,
        direction=run.direction,
        normal_median=at[0],
        peak=float(values[run.peak]),
        profile=tuple((t, round(v, 3)) for t, v in zip(times.tolist(), z.tolist(), strict=True)),
        until=run.until,
        under_way=run.under_way,
    )


def peer_spreads(measured: Iterable[tuple[Series, np.ndarray, float]]) -> dict[str, float]:
    """Per metric, the least spread of the normal periods that moved at all (each given with
    its own spread). A series that never moved in its normal period has an unknown spread,
    not a zero one: it is taken to be as steady as the steadiest of its peers that moved."""
    by_metric: dict[str, list[float]] = {}
    for s, ref, own in measured:
        if ref.size >= _MIN_NORMAL and own > 0:
            by_metric.setdefault(s.metric, []).append(own)
    return {m: float(np.min(v)) for m, v in by_metric.items()}


def unmatched(normal: Sequence[Series], now: Sequence[Series]) -> set[tuple[str, str, str]]:
    """The window's series (entity, metric, instance) with no point recorded before the window."""
    held = {(s.entity, s.metric, s.instance) for s in normal if np.isfinite(s.values).any()}
    return {(s.entity, s.metric, s.instance) for s in now} - held


def metric_shifts(
    normal: Sequence[Series], now: Sequence[Series], fault_free: Sequence[Series] = (), *, peers: bool = True
) -> list[MetricShift]:
    """A MetricShift per series of the incident window, strongest first. A series' normal is
    its own recent past: its look-back (`normal`), or where that holds too little of it, the
    window's own start. Only a series with no point recorded before the window (a recording
    that begins inside it) is measured against a stretch recorded apart (`fault_free`). A
    normal that never moved is measured in its peers' spread (peer_spreads; `peers=False`
    is the ablation: then its scale is the floor, and any departure scores MAX_Z)."""
    base = {(s.entity, s.metric, s.instance): s for s in fault_free}
    base.update({(s.entity, s.metric, s.instance): s for s in normal if np.isfinite(s.values).any()})
    refs = [reference(base.get((s.entity, s.metric, s.instance)), s) for s in now]
    levels = [level(ref) if ref.size else (float("nan"), 0.0) for ref in refs]
    unmoved = peer_spreads(zip(now, refs, (own for _, own in levels), strict=True)) if peers else {}
    out = [
        shift
        for s, ref, at in zip(now, refs, levels, strict=True)
        if (shift := shift_of(None, s, unmoved=unmoved.get(s.metric, 0.0), ref=ref, at=at)) is not None
    ]
    return sorted(out, key=lambda m: -m.score)
