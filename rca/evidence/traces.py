"""Trace evidence: where latency originates, per service (own time) and per call (network gap).

A span's time splits into its own work and the time spent waiting on children. For a call
into another service, the caller's client span minus the callee's server span is the time on
the wire (plus queueing): a delay injected on a service's network shows there, on the calls
into and out of that service, while its own work stays the same.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rca.evidence.runs import Placed, place
from rca.model import Span

MIN_SAMPLES = 3


@dataclass(frozen=True, slots=True)
class Timing:
    """One measured piece of time: a service's own work or a call's network gap."""

    subject: str  # service name, or "caller->callee"
    start: float
    seconds: float


def timings(spans: Sequence[Span]) -> tuple[list[Timing], list[Timing]]:
    """Own-work times per service and network gaps per call edge."""
    children: dict[tuple[str, str], list[Span]] = defaultdict(list)
    for s in spans:
        if s.parent_id:
            children[(s.trace_id, s.parent_id)].append(s)
    own, gaps = [], []
    for s in spans:
        kids = children.get((s.trace_id, s.span_id), [])
        remote = [k for k in kids if k.entity != s.entity]
        local = [k for k in kids if k.entity == s.entity]
        if remote:
            gap = max(0.0, s.duration - _covered(s, remote))
            for callee in {k.entity for k in remote}:
                gaps.append(Timing(f"{s.entity}->{callee}", s.start, gap))
        else:
            own.append(Timing(s.entity, s.start, max(0.0, s.duration - _covered(s, local))))
    return own, gaps


def _covered(parent: Span, kids: Sequence[Span]) -> float:
    """Time inside the parent covered by at least one child (children may overlap)."""
    if not kids:
        return 0.0
    intervals = sorted((max(k.start, parent.start), min(k.end, parent.end)) for k in kids)
    total, cur_s, cur_e = 0.0, intervals[0][0], intervals[0][1]
    for s, e in intervals[1:]:
        if s > cur_e:
            total += max(0.0, cur_e - cur_s)
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + max(0.0, cur_e - cur_s)


@dataclass(frozen=True, slots=True)
class GapShare:
    """Shares of a service's calls whose network gap shifted and that are its own doing:
    incoming calls slowed on their way to it, and outgoing calls slowed on its own side."""

    incoming: float
    outgoing: float


@dataclass(frozen=True, slots=True)
class LatencyShift:
    """A latency distribution now against normal, judged bin by bin through the window."""

    subject: str
    normal_p50: float
    now_p50: float  # in the bin where it departs most
    normal_p90: float
    now_p90: float
    count: int
    score: float  # the largest departure of a bin, in robust units
    onset: float | None  # the first bin of a departure that holds (two bins, or the last one)
    profile: tuple[tuple[float, float], ...] = ()  # (bin start, robust departure) through the window
    until: float | None = None  # where the departure ended, when it ended well before the last bin
    under_way: bool = False  # departed from the first bin on: it began before the spans read


# Spans are judged per minute, the step at which metrics are usually scraped; a minute with
# fewer than MIN_SAMPLES timings is merged with the next, so a quiet call is judged as well.
BIN_SECONDS = 60.0


def _departure(ref_50: float, ref_90: float, scale: float, tail_scale: float, cur: np.ndarray) -> tuple[float, float, float]:
    """How far a set of timings sits above normal (median and tail), and its p50 and p90.

    The median moves when every call is slowed; a tail alone moves with a few stragglers."""
    c50, c90 = (float(v) for v in np.percentile(cur, [50, 90]))
    score = min((c50 - ref_50) / scale, (c90 - ref_90) / tail_scale) if c90 > ref_90 else (c50 - ref_50) / scale
    return score, c50, c90


def _bins(now: Sequence[Timing]) -> list[tuple[float, np.ndarray]]:
    """The timings by minute, a minute with too few of them merged into the next."""
    by_bin: dict[int, list[float]] = defaultdict(list)
    for t in now:
        by_bin[int(t.start // BIN_SECONDS)].append(t.seconds)
    out: list[tuple[float, np.ndarray]] = []
    pending: list[float] = []
    start: int | None = None
    for b in sorted(by_bin):
        start = b if start is None else start
        pending.extend(by_bin[b])
        if len(pending) >= MIN_SAMPLES:
            out.append((start * BIN_SECONDS, np.array(pending)))
            pending, start = [], None
    if pending and out:  # a short tail joins the last full bin
        t0, last = out[-1]
        out[-1] = (t0, np.concatenate([last, pending]))
    return out


def shift(subject: str, normal: Sequence[Timing], now: Sequence[Timing]) -> LatencyShift | None:
    """How far the median and the tail moved, bin by bin, in robust units; None without enough
    samples."""
    if len(now) < MIN_SAMPLES or len(normal) < MIN_SAMPLES:
        return None
    ref = np.array([t.seconds for t in normal])
    n50, n90 = (float(v) for v in np.percentile(ref, [50, 90]))
    mad = 1.4826 * float(np.median(np.abs(ref - n50)))
    scale = max(mad, 0.1 * n50, 1e-3)  # below a millisecond is noise
    tail_scale = max(scale, 0.1 * n90)
    bins = _bins(now)
    parts = [(t0, *_departure(n50, n90, scale, tail_scale, cur)) for t0, cur in bins]
    if not parts:
        return None
    times = np.array([p[0] for p in parts])
    z = np.array([p[1] for p in parts])
    at = place(times, z)
    if at.direction < 0:  # faster than normal is no latency fault: the largest rise stands
        peak = int(np.argmax(z))
        at = Placed(float(z[peak]), 1, peak, None, None, False)
    _, score, c50, c90 = parts[at.peak]
    return LatencyShift(
        subject, n50, c50, n90, c90, len(now), float(score), at.onset,
        tuple((float(t), round(float(v), 3)) for t, v in zip(times, z, strict=True)), at.until, at.under_way,
    )  # fmt: skip


def latency_shifts(normal: Sequence[Timing], now: Sequence[Timing]) -> list[LatencyShift]:
    """A shift per subject present in both periods, strongest first."""
    ref: dict[str, list[Timing]] = defaultdict(list)
    cur: dict[str, list[Timing]] = defaultdict(list)
    for t in normal:
        ref[t.subject].append(t)
    for t in now:
        cur[t.subject].append(t)
    out = [s for subj, items in cur.items() if (s := shift(subj, ref.get(subj, []), items))]
    return sorted(out, key=lambda s: -s.score)
