"""Trace evidence: where latency originates, per service (own time) and per call (network gap);
callees whose good answers were failed; services that gave up on their calls and sent them again.

A span's time splits into its own work and the time spent waiting on children. For a call
into another service, the caller's client span minus the callee's server span is the time on
the wire (plus queueing): a delay injected on a service's network shows there, on the calls
into and out of that service, while its own work stays the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rca.evidence.runs import Placed, place
from rca.telemetry import Span, SpanStatus, SpanTable

MIN_SAMPLES = 3


@dataclass(frozen=True, slots=True)
class Timings:
    """Measured pieces of time, as columns: a service's own work or a call's network gap.

    A trace read holds tens of thousands of spans; kept as arrays from the span tree to the
    per-minute percentiles, no Python object is built per span."""

    subject: np.ndarray  # service name, or "caller->callee" (str objects)
    start: np.ndarray  # when the span began, epoch seconds
    seconds: np.ndarray

    def by_subject(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """(starts, seconds) per subject, in the order read."""
        if self.subject.size == 0:
            return {}
        codes, names = pd.factorize(self.subject)
        order = np.argsort(codes, kind="stable")
        cuts = np.flatnonzero(np.diff(codes[order])) + 1
        return {str(names[codes[idx[0]]]): (self.start[idx], self.seconds[idx]) for idx in np.split(order, cuts)}


def _timings(subject: Sequence[str] | np.ndarray, start: np.ndarray, seconds: np.ndarray) -> Timings:
    return Timings(np.asarray(subject, dtype=object), np.asarray(start, dtype=float), np.asarray(seconds, dtype=float))


def timings(spans: Sequence[Span]) -> tuple[Timings, Timings]:
    """Own-work times per service and network gaps per call edge.

    A span's own work is its duration less the time its children in the same service cover;
    a span that calls other services has no own work of its own here: its duration less the
    time its remote children cover is the gap on each of those calls."""
    if not spans:
        empty = _timings([], np.array([]), np.array([]))
        return empty, empty
    table = SpanTable.of(spans)
    n = len(table)
    entity, start, end = table.entity, table.start, table.end
    child, parent = table.parent_pairs()
    remote = entity[child] != entity[parent]
    calls_out = np.zeros(n, dtype=bool)
    calls_out[parent[remote]] = True
    counted = remote == calls_out[parent]  # remote children of a caller, local ones otherwise
    covered = _covered(
        parent[counted],
        np.maximum(start[child[counted]], start[parent[counted]]),
        np.minimum(end[child[counted]], end[parent[counted]]),
        n,
    )
    left = np.maximum(0.0, (end - start) - covered)
    own = _timings(entity[~calls_out], start[~calls_out], left[~calls_out])
    edges = pd.DataFrame({"parent": parent[remote], "callee": entity[child[remote]]}).drop_duplicates()
    p = edges["parent"].to_numpy()
    subject = entity[p] + "->" + edges["callee"].to_numpy(dtype=object)
    return own, _timings(subject, start[p], left[p])


def _covered(group: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """Per group (0..n-1), the length of the union of its intervals [lo, hi] (they may overlap;
    an empty interval adds nothing)."""
    out = np.zeros(n)
    if group.size == 0:
        return out
    order = np.lexsort((lo, group))
    g, lo, hi = group[order], lo[order], hi[order]
    first = np.ones(g.size, dtype=bool)
    first[1:] = g[1:] != g[:-1]
    reach = pd.Series(hi).groupby(g).cummax().to_numpy()  # the furthest end so far in the group
    before = np.empty_like(reach)
    before[0] = -np.inf
    before[1:] = reach[:-1]
    fresh = first | (lo > before)  # a new stretch: the group's first, or past all before it
    s_lo = lo[fresh]
    s_hi = np.maximum.reduceat(hi, np.flatnonzero(fresh))
    np.add.at(out, g[fresh], np.maximum(0.0, s_hi - s_lo))
    return out


@dataclass(frozen=True, slots=True)
class GapShare:
    """Shares of a service's calls whose network gap shifted and that are its own doing:
    incoming calls slowed on their way to it, and outgoing calls slowed on its own side; and
    the callees whose calls from it the traces timed in the window (slowed or not)."""

    incoming: float
    outgoing: float
    timed: frozenset[str] = frozenset()


NO_GAPS = GapShare(1.0, 0.0)  # no traces: every shift is the service's own, no call timed


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


def _departure(
    ref_50: float, ref_90: float, scale: float, tail_scale: float, cur: np.ndarray
) -> tuple[float, float, float]:
    """How far a set of timings sits above normal (median and tail), and its p50 and p90.

    The median moves when every call is slowed; a tail alone moves with a few stragglers."""
    c50, c90 = (float(v) for v in np.percentile(cur, [50, 90]))
    score = min((c50 - ref_50) / scale, (c90 - ref_90) / tail_scale) if c90 > ref_90 else (c50 - ref_50) / scale
    return score, c50, c90


def _bins(start: np.ndarray, seconds: np.ndarray) -> list[tuple[float, np.ndarray]]:
    """The timings by minute, a minute with too few of them merged into the next."""
    minute = np.floor(start / BIN_SECONDS).astype(np.int64)
    order = np.argsort(minute, kind="stable")
    minute, seconds = minute[order], seconds[order]
    firsts = np.flatnonzero(np.r_[True, minute[1:] != minute[:-1]])
    out: list[tuple[float, np.ndarray]] = []
    begin: int | None = None  # where the pending minutes begin, as an index into the sorted timings
    for i, at in enumerate(firsts):
        begin = int(at) if begin is None else begin
        stop = int(firsts[i + 1]) if i + 1 < firsts.size else minute.size
        if stop - begin >= MIN_SAMPLES:
            out.append((float(minute[begin]) * BIN_SECONDS, seconds[begin:stop]))
            begin = None
    if begin is not None and out:  # a short tail joins the last full bin
        t0, last = out[-1]
        out[-1] = (t0, np.concatenate([last, seconds[begin:]]))
    return out


def shift(subject: str, normal: np.ndarray, now: tuple[np.ndarray, np.ndarray]) -> LatencyShift | None:
    """How far the median and the tail moved, bin by bin, in robust units; None without enough
    samples. `normal`: the normal period's seconds; `now`: the window's (starts, seconds)."""
    starts, seconds = now
    if seconds.size < MIN_SAMPLES or normal.size < MIN_SAMPLES:
        return None
    ref = normal
    n50, n90 = (float(v) for v in np.percentile(ref, [50, 90]))
    mad = 1.4826 * float(np.median(np.abs(ref - n50)))
    scale = max(mad, 0.1 * n50, 1e-3)  # below a millisecond is noise
    tail_scale = max(scale, 0.1 * n90)
    bins = _bins(starts, seconds)
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
        subject,
        n50,
        c50,
        n90,
        c90,
        int(seconds.size),
        float(score),
        at.onset,
        tuple((float(t), round(float(v), 3)) for t, v in zip(times, z, strict=True)),
        at.until,
        at.under_way,
    )


def latency_shifts(normal: Timings, now: Timings) -> list[LatencyShift]:
    """A shift per subject present in both periods, strongest first."""
    ref = normal.by_subject()
    none = np.array([])
    out = [s for subj, cur in now.by_subject().items() if (s := shift(subj, ref.get(subj, (none, none))[1], cur))]
    return sorted(out, key=lambda s: -s.score)


@dataclass(frozen=True, slots=True)
class WrongAnswers:
    """Calls a service answered in time and as a success, that its callers still failed: what
    it answered was wrong. Counted per minute against the normal share of such calls."""

    callee: str
    callers: tuple[str, ...]
    count: int  # such calls in the window
    calls: int  # the window's calls into it from those callers
    score: float  # the window's count as a Poisson deviation from the normal share
    onset: float | None
    profile: tuple[tuple[float, float], ...] = ()  # (minute, Poisson deviation) through the window
    until: float | None = None
    under_way: bool = False


def _answers(spans: Sequence[Span]) -> pd.DataFrame:
    """Every call into another service: caller, callee, when, and whether the caller failed it
    though the callee answered it as a success: in time (`misread`), or at all."""
    if not spans:
        return pd.DataFrame({"caller": [], "callee": [], "start": [], "misread": [], "let_down": []})
    table = SpanTable.of(spans)
    child, parent = table.parent_pairs()
    remote = table.entity[child] != table.entity[parent]
    child, parent = child[remote], parent[remote]
    status, end = table.status, table.end
    let_down = (status[parent] == SpanStatus.ERROR) & (status[child] != SpanStatus.ERROR)
    return pd.DataFrame(
        {
            "caller": table.entity[parent],
            "callee": table.entity[child],
            "start": table.start[parent],
            "misread": let_down & (end[child] <= end[parent]),
            "let_down": let_down,
        }
    )


def _deviation(seen: Any, want: Any) -> Any:
    """Counts seen against counts expected, in Poisson deviations (numbers or arrays)."""
    return (seen - want) / np.sqrt(want + 1.0)


def wrong_answers(normal: Sequence[Span], now: Sequence[Span], *, min_z: float) -> list[WrongAnswers]:
    """Per callee, the calls it answered as a success in time that its callers failed, where
    their count departs from the normal share by `min_z` Poisson deviations. A caller that
    fails calls answered as a success (in time or after it gave up) to two or more callees,
    and to most of those it calls, is failing them on its own side (its deadline, its
    reading): those calls count against it, not its callees."""
    cur = _answers(now)
    if cur.empty or not cur["misread"].any():
        return []
    keys = ["caller", "callee"]
    share = _answers(normal).groupby(keys)[["misread", "let_down"]].mean()  # per edge, in the normal period
    edges = cur.groupby(keys).agg(sum=("misread", "sum"), down=("let_down", "sum"), size=("misread", "size"))
    normal_share = share.reindex(edges.index).fillna(0.0)
    edges["want"] = normal_share["misread"].to_numpy(dtype=float) * edges["size"]
    departing = _deviation(edges["sum"], edges["want"]) >= min_z
    let_down = _deviation(edges["down"], normal_share["let_down"].to_numpy(dtype=float) * edges["size"]) >= min_z
    by_caller = let_down.groupby(level="caller").agg(["sum", "size"])
    own_side = set(by_caller.index[(by_caller["sum"] >= 2) & (by_caller["sum"] >= 0.5 * by_caller["size"])])
    kept = edges[departing & ~edges.index.get_level_values("caller").isin(own_side)]
    out = []
    for callee, rows in kept.groupby(level="callee"):
        callers = tuple(sorted(str(c) for c in rows.index.get_level_values("caller")))
        calls = cur[(cur["callee"] == callee) & cur["caller"].isin(callers)]
        minute = np.floor(calls["start"].to_numpy(dtype=float) / BIN_SECONDS)
        bins, where = np.unique(minute, return_inverse=True)
        seen = np.bincount(where, weights=calls["misread"].to_numpy(dtype=float))
        rates = normal_share["misread"].xs(callee, level="callee").reindex(calls["caller"]).to_numpy(dtype=float)
        z = _deviation(seen, np.bincount(where, weights=rates))
        at = place(bins * BIN_SECONDS, z)
        out.append(
            WrongAnswers(
                str(callee),
                callers,
                int(rows["sum"].sum()),
                int(rows["size"].sum()),
                float(_deviation(rows["sum"].sum(), rows["want"].sum())),
                at.onset,
                tuple((float(t) * BIN_SECONDS, round(float(v), 3)) for t, v in zip(bins, z, strict=True)),
                at.until,
                at.under_way,
            )
        )
    return sorted(out, key=lambda w: -w.score)


@dataclass(frozen=True, slots=True)
class RepeatedCalls:
    """Calls a service gave up on before they were answered and sent again, for requests of
    one kind, more often per request than it normally did: a retry storm of its own making. A
    caller that stops waiting before its callee answers (the callee went on and answered
    after) was not answered wrong or failed by the callee: it cut the call short itself. A
    call sent again after an answer (an error, a wrong body) is the callee's doing, and a span
    layout that records no caller-side end of a call cannot tell, so neither counts. Counted
    per minute against the normal number per request, as a Poisson deviation."""

    caller: str
    subject: str  # "<request served> -> <call sent>"
    callee: str  # the service the calls went to ("" where the spans do not say)
    sent: int  # such calls in the window: given up on, then sent again
    expected: float  # how many the window's requests send at the normal number per request
    score: float  # the largest deviation of a minute, in the run placed
    onset: float | None
    profile: tuple[tuple[float, float], ...] = ()  # (minute, Poisson deviation) through the window
    until: float | None = None
    under_way: bool = False


def _sends(spans: Sequence[Span]) -> pd.DataFrame:
    """Per request a service served and kind of call it sent from it: the service, the kind
    ("<request> -> <call>", a call into another service named with it), when the request
    began, and how many such calls it gave up on before they were answered (a child of the
    call in another service worked on it longer than the call lasted) and then sent again (a
    later call of the kind followed in the request). Counted on integer codes; a kind's name
    is made once per kind, not per span."""
    if not spans:
        return pd.DataFrame({"caller": [], "kind": [], "callee": [], "start": [], "n": []})
    table = SpanTable.of(spans)
    child, parent = table.parent_pairs()
    ent, ents = pd.factorize(table.entity)
    op, ops = pd.factorize(table.operation)
    # Per span: the longest any other service worked on it (each span timed on its own host's
    # clock, so no offset between the hosts' clocks enters): a call that the callee worked on
    # longer than the caller waited for it was given up on.
    seconds = table.end - table.start
    worked = np.zeros(len(table))
    remote = ent[child] != ent[parent]
    np.maximum.at(worked, parent[remote], seconds[child[remote]])
    gave_up = worked[child] > seconds[child]
    answerer = np.full(len(table), -1)  # per span: the service that served it, where another did
    answerer[parent[remote]] = ent[child[remote]]
    callee = np.where(remote, ent[child], answerer[child])  # a call span's callee: the service it went to
    calls = (len(ents) + 1) * len(ops)  # a call's code: its operation, and its callee where it left the service
    sent = (callee + 1) * len(ops) + op[child]
    group = parent.astype(np.int64) * calls + sent
    order = np.lexsort((table.start[child], group))  # within a request's calls of a kind, by when sent
    last = np.ones(order.size, dtype=bool)
    last[:-1] = group[order][1:] != group[order][:-1]
    again = np.zeros(order.size, dtype=bool)
    again[order] = gave_up[order] & ~last  # given up, and a later call of the kind followed
    pairs, where = np.unique(group, return_inverse=True)
    n = np.bincount(where, weights=again.astype(float))
    request, call = pairs // calls, pairs % calls
    kind_code, kinds = pd.factorize(op[request].astype(np.int64) * calls + call)
    callee, call_op = np.divmod(kinds % calls, len(ops))
    names = np.array(
        [
            f"{ops[k // calls]} -> {ents[c - 1] + ' ' if c else ''}{ops[o]}"
            for k, c, o in zip(kinds, callee, call_op, strict=True)
        ],
        dtype=object,
    )
    callees = np.array([ents[c - 1] if c else "" for c in callee], dtype=object)
    return pd.DataFrame(
        {
            "caller": np.asarray(ents, dtype=object)[ent[request]],
            "kind": names[kind_code],
            "callee": callees[kind_code],
            "start": table.start[request],
            "n": n,
        }
    )


def repeated_calls(normal: Sequence[Span], now: Sequence[Span], *, min_z: float) -> list[RepeatedCalls]:
    """Per service and kind of request, the calls it gave up on and sent again more often per
    request than in the normal period, where a minute's count departs from the normal number
    per request by `min_z` Poisson deviations or more. A kind the normal period never sent,
    or sent from fewer than MIN_SAMPLES requests, has no normal number to depart from."""
    cur, ref = _sends(now), _sends(normal)
    if cur.empty or ref.empty:
        return []
    keys = ["caller", "kind"]
    per_request = ref.groupby(keys)["n"].agg(["mean", "size"])
    per_request = per_request[per_request["size"] >= MIN_SAMPLES]["mean"].rename("rate")
    cur["minute"] = np.floor(cur["start"].to_numpy(dtype=float) / BIN_SECONDS)
    minutes = cur.groupby([*keys, "minute"]).agg(seen=("n", "sum"), requests=("n", "size")).join(per_request, on=keys)
    minutes = minutes[minutes["rate"].notna()]
    minutes["z"] = _deviation(minutes["seen"], minutes["requests"] * minutes["rate"])
    flagged = minutes.groupby(level=keys)["z"].max() >= min_z  # only these can hold a run past min_z
    out = []
    callee_of = dict(zip(cur["kind"], cur["callee"], strict=True))
    for (caller, kind), rows in minutes[minutes.index.droplevel("minute").isin(flagged[flagged].index)].groupby(
        level=keys
    ):
        bins = rows.index.get_level_values("minute").to_numpy(dtype=float)
        z = rows["z"].to_numpy(dtype=float)
        at = place(bins * BIN_SECONDS, z)
        if at.direction < 0 or at.score < min_z:
            continue
        out.append(
            RepeatedCalls(
                str(caller),
                str(kind),
                str(callee_of[kind]),
                int(round(float(rows["seen"].sum()))),
                float((rows["requests"] * rows["rate"]).sum()),
                at.score,
                at.onset,
                tuple((float(t) * BIN_SECONDS, round(float(v), 3)) for t, v in zip(bins, z, strict=True)),
                at.until,
                at.under_way,
            )
        )
    return sorted(out, key=lambda r: -r.score)
