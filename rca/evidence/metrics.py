"""Metric evidence: how far each series left its normal range, and when it left."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rca.model import Series
from rca.signals import Signal, signal_of

# A deviation within this share of the median is treated as measurement noise. A level that
# a fault moves by a large share (memory held) gets a wider floor: a flat series drifting by a
# percent is housekeeping, not a leak.
_REL_FLOOR = 0.001
_REL_FLOOR_OF: dict[Signal, float] = {Signal.MEMORY: 0.02}
_MIN_NORMAL = 3
ONSET_Z = 3.0
MAX_Z = 1e4  # beyond this a deviation from a flat baseline says nothing more


@dataclass(frozen=True, slots=True)
class MetricShift:
    entity: str
    metric: str
    instance: str
    signal: Signal
    score: float  # largest robust z inside the window
    onset: float | None  # first time |z| passed ONSET_Z and stayed past it at the next point
    direction: int
    normal_median: float
    peak: float
    profile: tuple[tuple[float, float], ...] = ()  # (time, robust z) across the window
    until: float | None = None  # the last time past ONSET_Z, where the series came back well before the window's end


def robust_z(normal: np.ndarray, values: np.ndarray, rel_floor: float = _REL_FLOOR) -> np.ndarray:
    """(x - median) / scale: scale is 1.4826 MAD, or half the standard deviation when most
    normal points sit on one value, floored at a thousandth of |median| (a series that never
    moved, like 100 % availability, makes a one-point drop stand out, not infinite)."""
    med = float(np.median(normal))
    mad = 1.4826 * float(np.median(np.abs(normal - med)))
    scale = max(mad, 0.5 * float(np.std(normal)), rel_floor * abs(med), 1e-9)
    return np.clip((values - med) / scale, -MAX_Z, MAX_Z)


def shift_of(normal: Series | None, now: Series, *, local_end: float | None = None) -> MetricShift | None:
    """The shift of one series against its normal part; None when there is nothing to compare.

    With `local_end`, the points of the window before it are the series' recent past: a
    value counts only as far as it departs from both the normal period and that recent
    past (in the normal period's units), so a level that had already drifted before the
    incident began is not taken for the incident.
    """
    values, times = now.values, now.timestamps
    keep = np.isfinite(values)
    values, times = values[keep], times[keep]
    ref = normal.values[np.isfinite(normal.values)] if normal is not None else np.array([])
    if ref.size < _MIN_NORMAL:  # no normal data: the first third of the window serves
        cut = max(1, values.size // 3)
        ref, values, times = values[:cut], values[cut:], times[cut:]
    if values.size == 0 or ref.size == 0:
        return None
    floor = _REL_FLOOR_OF.get(signal_of(now.metric), _REL_FLOOR)
    z = robust_z(ref, values, floor)
    if local_end is not None:
        recent = times < local_end
        if recent.any() and (~recent).any():
            local = robust_z(ref, values[recent], floor)
            base = float(np.median(local))
            later = z[~recent]
            z = np.where(np.sign(later) == np.sign(later - base), np.sign(later) * np.minimum(
                np.abs(later), np.abs(later - base)), 0.0)  # fmt: skip
            values, times = values[~recent], times[~recent]
    peak_i = int(np.argmax(np.abs(z)))
    signed = z if z[peak_i] >= 0 else -z
    return MetricShift(
        entity=now.entity, metric=now.metric, instance=now.instance, signal=signal_of(now.metric),
        score=float(abs(z[peak_i])), onset=_onset(times, signed), direction=1 if z[peak_i] >= 0 else -1,
        normal_median=float(np.median(ref)), peak=float(values[peak_i]),
        profile=tuple((float(t), round(float(v), 3)) for t, v in zip(times, z, strict=True)),
        until=_until(times, signed),
    )  # fmt: skip


def _onset(times: np.ndarray, z: np.ndarray) -> float | None:
    """When z first passes ONSET_Z and stays there a second point (z signed so that the
    shift's own direction is positive: a return from it is no onset)."""
    over = z >= ONSET_Z
    for i in range(over.size):
        if over[i] and (i + 1 >= over.size or over[i + 1]):
            return float(times[i])
    return None


# a shift counts as over when the series stayed back below ONSET_Z for this many points
_BACK_POINTS = 3


def _until(times: np.ndarray, z: np.ndarray) -> float | None:
    """The last time z was past ONSET_Z, when the series then stayed back for the rest of
    the window (at least _BACK_POINTS points); None while it goes on."""
    over = np.flatnonzero(z >= ONSET_Z)
    if over.size == 0 or z.size - 1 - int(over[-1]) < _BACK_POINTS:
        return None
    return float(times[int(over[-1])])


def metric_shifts(
    normal: Sequence[Series], now: Sequence[Series], *, local_end: float | None = None
) -> list[MetricShift]:
    """A MetricShift per series of the incident window, strongest first."""
    base = {(s.entity, s.metric, s.instance): s for s in normal}
    out = [
        shift
        for s in now
        if (shift := shift_of(base.get((s.entity, s.metric, s.instance)), s, local_end=local_end))
        is not None
    ]
    return sorted(out, key=lambda m: -m.score)

