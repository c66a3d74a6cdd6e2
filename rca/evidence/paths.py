"""Code paths cut short, read from logs (and spans where there are some): two marks a service
leaves in the same trace, the second of which always followed the first in the normal period
and now, in some traces, does not (an exception thrown between them, a call that returned
early)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rca.evidence.logs import ONSET_BIN_SECONDS, MinedLog, anomalous_run, run_interval
from rca.telemetry import Span, SpanTable, Window

# A code path: two marks a service leaves in the same trace (two of its templates, or its span
# of an operation and any line of its own); in the normal period the second follows the first
# in at least this share of the traces that left the first, over at least this many traces.
PATH_MIN_SHARE = 0.95
PATH_MIN_TRACES = 10
# a trace this close to an edge of the window, or of the logs read, may have been cut by that
# edge, not by the code
PATH_EDGE_SECONDS = 10.0
_SPAN = "span:"  # the mark of a span, by operation
_ANY_LINE = "any-line"  # the mark of any line the service wrote


@dataclass(frozen=True, slots=True)
class CutPath:
    """A code path a service stopped finishing: traces that left `first` but not `then`."""

    entity: str
    first_id: str  # a template id, "span:" and an operation, or "any-line"
    first: str  # the mark, in words
    then_id: str
    then: str
    traces: int  # traces in the window that left `first`
    cut: int  # of which did not leave `then`
    normal_share: float  # share of such traces that left `then` in the normal period
    score: float
    onset: float
    until: float
    under_way: bool = False


# (service, trace) -> mark -> (time, what it says): a line's template or a span's operation,
# as read (the one object every trace shares; put in words only for the paths reported)
_Marks = dict[tuple[str, str], dict[str, tuple[float, str]]]


def _marks(logs: Sequence[MinedLog], spans: Sequence[Span], logged: Callable[[str, float], bool]) -> _Marks:
    """Per (service, trace): each mark's first time and what it says. Spans count where
    `logged(service, time)`: where the service's lines of that time are read at all."""
    out: _Marks = {}

    def add(entity: str, trace: str, mark: str, time: float, says: str) -> None:
        seen = out.setdefault((entity, trace), {})
        if mark not in seen or time < seen[mark][0]:
            seen[mark] = (time, says)

    for m in logs:
        if m.record.trace_id:
            add(m.record.entity, m.record.trace_id, m.template_id, m.record.time, m.template)
            add(m.record.entity, m.record.trace_id, _ANY_LINE, m.record.time, "")
    table = SpanTable.of(spans)  # read by column: a span object per row would cost more than the marks
    span_marks: dict[str, str] = {}  # an operation's mark, made once
    for entity, trace, operation, start in zip(
        table.entity, table.trace_id, table.operation, table.start.tolist(), strict=True
    ):
        if trace and logged(entity, start):
            mark = span_marks.get(operation) or span_marks.setdefault(operation, _SPAN + operation)
            add(entity, trace, mark, start, operation)
    return out


def _words(mark: str, says: str) -> str:
    """A mark in words: a line's template, a span's operation, or any line."""
    if mark == _ANY_LINE:
        return "a line of its own"
    if mark.startswith(_SPAN):
        return f"its span '{says[:80]}'"
    return f"'{says[:80]}'"


def _normal_paths(marks: _Marks) -> dict[tuple[str, str, str], float]:
    """Per (service, first, then) that one code path leaves: the share of the traces that
    left `first` and then `then`, where that share is at least PATH_MIN_SHARE."""
    with_first: Counter[tuple[str, str]] = Counter()
    together: Counter[tuple[str, str, str]] = Counter()
    for (entity, _), seen in marks.items():
        for a in seen:
            with_first[(entity, a)] += 1
    for (entity, _), seen in marks.items():
        frequent = [a for a in seen if with_first[(entity, a)] >= PATH_MIN_TRACES]
        lines = [a for a in frequent if not a.startswith(_SPAN) and a != _ANY_LINE]
        for a in lines:  # two templates
            for b in lines:
                if a != b:
                    together[(entity, a, b)] += 1
        if _ANY_LINE in frequent:  # a span and any line
            for a in frequent:
                if a.startswith(_SPAN):
                    together[(entity, a, _ANY_LINE)] += 1
    return {key: n / with_first[key[:2]] for key, n in together.items() if n >= PATH_MIN_SHARE * with_first[key[:2]]}


def cut_paths(
    normal: Sequence[MinedLog],
    now: Sequence[MinedLog],
    window: Window,
    *,
    normal_spans: Sequence[Span] = (),
    now_spans: Sequence[Span] = (),
) -> list[CutPath]:
    """Code paths cut short: where logs carry trace ids, pairs of marks one service leaves
    together in (nearly) every normal trace, now left apart.

    A thrown exception or an early return stops a service's code between two of its log
    lines; the first keeps coming and the second goes missing in the same requests, while
    callers that fail because of it still write both of theirs. Where spans are read too, a
    service whose span of an operation came with lines of its own, and now comes with none,
    stopped before its first line. Scored as a Poisson deviation of the traces missing the
    second mark; the onset is where those traces begin to exceed what the normal share
    predicts.
    """
    minutes = {(m.record.entity, int(m.record.time // 60)) for m in normal}
    normal_marks = _marks(normal, normal_spans, lambda e, t: (e, int(t // 60)) in minutes)
    shares = _normal_paths(normal_marks)
    # each mark in words, from the normal period, then (in its stead) from the window: made
    # here so that the normal period's marks are let go before the window's are gathered
    words: dict[tuple[str, str], str] = {}
    for (entity, _), seen in normal_marks.items():
        for mark, (_, says) in seen.items():
            if (entity, mark) not in words:
                words[(entity, mark)] = _words(mark, says)
    del normal_marks
    follows: dict[tuple[str, str], list[str]] = {}
    for entity, a, b in shares:
        follows.setdefault((entity, a), []).append(b)
    traces: Counter[tuple[str, str, str]] = Counter()
    cut: Counter[tuple[str, str, str]] = Counter()
    bins: dict[tuple[str, str, str], tuple[Counter[int], Counter[int]]] = {}
    said: set[tuple[str, str]] = set()  # marks put in words from the window
    read = [m.record.time for m in now]
    start = max(window.start, min(read, default=window.start)) + PATH_EDGE_SECONDS
    end = min(window.end, max(read, default=window.end)) - PATH_EDGE_SECONDS
    with_lines = {entity for (entity, a) in follows if a.startswith(_SPAN)}  # services whose spans came with lines
    for (entity, _), seen in _marks(now, now_spans, lambda e, t: e in with_lines).items():
        times = [t for t, _ in seen.values()]
        if min(times) < start or max(times) > end:
            continue
        for a, (time, text) in seen.items():
            for b in follows.get((entity, a), ()):
                key = (entity, a, b)
                traces[key] += 1
                if key not in bins:
                    bins[key] = (Counter(), Counter())
                all_, missing = bins[key]
                t = int(time // ONSET_BIN_SECONDS)
                all_[t] += 1
                if (entity, a) not in said:
                    said.add((entity, a))
                    words[(entity, a)] = _words(a, text)
                if b not in seen:
                    cut[key] += 1
                    missing[t] += 1
    best: dict[tuple[str, str], CutPath] = {}
    for key, n in traces.items():
        entity, a, b = key
        share = shares[key]
        expected = n * (1.0 - share)
        score = (cut[key] - expected) / math.sqrt(expected + 1.0)
        if cut[key] == 0 or ((entity, a) in best and best[(entity, a)].score >= score):
            continue
        all_, missing = bins[key]
        onset, until, under_way = run_interval(
            anomalous_run(missing, {t: k * (1.0 - share) for t, k in all_.items()}, 1), (min(all_), max(all_))
        )
        best[(entity, a)] = CutPath(
            entity, a, words[(entity, a)], b, words[(entity, b)], n, cut[key], share, score, onset, until, under_way
        )
    return sorted(best.values(), key=lambda c: -c.score)
