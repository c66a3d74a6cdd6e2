"""Runs of a z-profile: the stretches where a series stood past ONSET_Z, and which of them an
incident asked about now is.

The incident asked about is the one going on when the window closes, so a series' evidence is
its run still going on then, or else its strongest run (which is over, another incident's). A
single sample is no change: a run begins where two samples in a row stand out (or the last
one does), a one-sample dip inside a run does not end it, and a run ends only where the series
stayed back two samples or more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ONSET_Z = 3.0


@dataclass(frozen=True, slots=True)
class Run:
    start: int  # first index past the threshold
    end: int  # last index past the threshold
    direction: int  # +1 above normal, -1 below
    peak: int  # index of its largest deviation


def runs(z: np.ndarray, threshold: float = ONSET_Z) -> list[Run]:
    """Maximal stretches past the threshold in one direction, one-sample dips bridged."""
    out: list[Run] = []
    for direction in (1, -1):
        over = np.flatnonzero(direction * z >= threshold)
        if over.size == 0:
            continue
        start = prev = int(over[0])
        for i in (int(x) for x in over[1:]):
            if i - prev > 2:  # back for two samples or more: the run ended
                out.append(_run(z, start, prev, direction))
                start = i
            prev = i
        out.append(_run(z, start, prev, direction))
    return sorted(out, key=lambda r: r.start)


def _run(z: np.ndarray, start: int, end: int, direction: int) -> Run:
    peak = start + int(np.argmax(direction * z[start : end + 1]))
    return Run(start, end, direction, peak)


@dataclass(frozen=True, slots=True)
class Placed:
    """The anomaly a profile is evidence of, placed in time."""

    score: float  # its largest |z|
    direction: int
    peak: int  # index of that deviation
    onset: float | None  # when its run began; None for a single sample, or with no run
    until: float | None  # when its run ended, when it is over; None while it goes on
    under_way: bool  # its run began at the first sample: it began before the data


def place(times: np.ndarray, z: np.ndarray, threshold: float = ONSET_Z) -> Placed:
    """The run going on at the window's end, else the strongest; the largest deviation where
    no sample stands out. `times` and `z` are non-empty and of one length."""
    found = runs(z, threshold)
    last = z.size - 1
    if not found:
        peak = int(np.argmax(np.abs(z)))
        return Placed(float(abs(z[peak])), 1 if z[peak] >= 0 else -1, peak, None, None, False)
    current = [r for r in found if r.end >= last - 1]
    run = current[-1] if current else max(found, key=lambda r: abs(float(z[r.peak])))
    held = run.end > run.start or run.end == last
    return Placed(
        score=float(abs(z[run.peak])),
        direction=run.direction,
        peak=run.peak,
        onset=float(times[run.start]) if held else None,
        until=None if current else float(times[run.end]),
        under_way=run.start == 0,
    )
