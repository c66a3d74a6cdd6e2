"""Z-profiles: a metric shift's course through the window, (time, robust z) per sample, and
how two of them relate."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Protocol

from rca.evidence.runs import ONSET_Z

Profile = Sequence[tuple[float, float]]


class Profiled(Protocol):
    """What carries a z-profile: a piece of evidence, or a metric shift before it is one."""

    @property
    def profile(self) -> Profile: ...


def profile_step(profiled: Sequence[Profiled]) -> float:
    """The sampling step the profiles share: the smallest gap between their time points."""
    return sampling_step([e.profile for e in profiled])


def sampling_step(profiles: Sequence[Profile]) -> float:
    """The smallest gap between the time points of these profiles (0 with fewer than two)."""
    times = sorted({float(t) for profile in profiles for t, _ in profile})
    gaps = [b - a for a, b in itertools.pairwise(times) if b - a > 1.0]
    return min(gaps) if gaps else 0.0


def shared_samples(a: Profile, b: Profile, step: float) -> tuple[dict[int, float], dict[int, float], list[int]]:
    """Two z-profiles by sample (time over the shared step), and the samples both have."""
    if step <= 0:
        return {}, {}, []
    da = {round(t / step): z for t, z in a}
    db = {round(t / step): z for t, z in b}
    return da, db, sorted(set(da) & set(db))


def comovement(a: Profile, b: Profile, step: float, *, signed: bool = False) -> float | None:
    """|Pearson correlation| of two z-profiles on the time buckets they share (signed: the
    correlation itself, for series that should move the same way); None if < 3."""
    da, db, common = shared_samples(a, b, step)
    if len(common) < 3:
        return None
    x = [da[k] for k in common]
    y = [db[k] for k in common]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sx = math.sqrt(sum((v - mx) ** 2 for v in x))
    sy = math.sqrt(sum((v - my) ** 2 for v in y))
    if sx == 0 or sy == 0:
        return None
    r = sum((u - mx) * (v - my) for u, v in zip(x, y, strict=True)) / (sx * sy)
    return r if signed else abs(r)


def move_together(a: Profile, b: Profile, step: float, floor: float) -> bool:
    """Two z-profiles move together: both past ONSET_Z in every sample they share (two or
    more), so the anomalies span the same time and their wobbles within it are noise; or else
    correlated at least `floor` where they share three samples or more."""
    da, db, common = shared_samples(a, b, step)
    if len(common) >= 2 and all(abs(da[k]) >= ONSET_Z and abs(db[k]) >= ONSET_Z for k in common):
        return True
    c = comovement(a, b, step, signed=True)
    return c is not None and c >= floor
