"""The spans tool of a toolbox: a service's own-time shift and the network-gap shifts of the
calls into and out of it, timed once from the window's spans and the normal stretches'; the
calls it gave up on and sent again more often per request than normally; and how much of the
gap shift around a service is its own."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rca.evidence import Evidence, EvidenceKind
from rca.evidence.reading import Reader, ToolResult, memoised
from rca.evidence.traces import (
    NO_GAPS,
    GapShare,
    LatencyShift,
    RepeatedCalls,
    WrongAnswers,
    latency_shifts,
    repeated_calls,
    timings,
    wrong_answers,
)
from rca.model import Incident, Modality
from rca.signals import Signal
from rca.sources.protocols import SpanQuery
from rca.telemetry import Span, SpanTable

TRACE_MIN_Z = 3.0

_Index = tuple[
    dict[str, LatencyShift], dict[str, LatencyShift], dict[str, WrongAnswers], dict[str, list[RepeatedCalls]]
]


def _index(ref: Sequence[Span], now: Sequence[Span]) -> _Index:
    """Own-time and network-gap shifts, by service and by call edge; wrong answers by callee;
    calls given up on and sent again, by caller. Each table's parent links are found once for
    the three readings."""
    ref, now = SpanTable.of(ref).linked(), SpanTable.of(now).linked()
    (o0, g0), (o1, g1) = timings(ref), timings(now)
    repeats: dict[str, list[RepeatedCalls]] = defaultdict(list)
    for r in repeated_calls(ref, now, min_z=TRACE_MIN_Z):
        repeats[r.caller].append(r)
    return (
        {s.subject: s for s in latency_shifts(o0, o1)},
        {s.subject: s for s in latency_shifts(g0, g1)},
        {w.callee: w for w in wrong_answers(ref, now, min_z=TRACE_MIN_Z)},
        dict(repeats),
    )


class _LastIndex:
    """The last trace index computed, kept with the source objects and windows it came from:
    the audit that follows an investigation of the same incident reads the same spans, and
    recomputing their timings would double the trace work. One entry, so nothing piles up in
    a long-running bot; the sources are held, so an identity is never reused while kept."""

    def __init__(self) -> None:
        self._entry: tuple[tuple[object, ...], _Index] | None = None
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], compute: Callable[[], _Index], *, keep: bool = True) -> _Index:
        with self._lock:
            entry = self._entry
        if entry is not None and entry[0] == key:  # sources by identity, windows by value
            return entry[1]
        value = compute()
        if keep:
            with self._lock:
                self._entry = (key, value)
        return value


_LAST_TRACE_INDEX = _LastIndex()


class TraceTools(Reader):
    def __init__(self, incident: Incident, *, wrong_answers: bool = True, repeats: bool = True, **options: Any) -> None:
        super().__init__(incident, **options)
        self.wrong_answers = wrong_answers  # calls a callee answered well that its caller failed are its evidence
        self.repeats = repeats  # calls a service gave up on and sent again more often than normally are its evidence
        self._own: dict[str, LatencyShift] | None = None
        self._gaps: dict[str, LatencyShift] | None = None
        self._wrong: dict[str, WrongAnswers] = {}
        self._repeats: dict[str, list[RepeatedCalls]] = {}
        self._traced: frozenset[str] | None = None  # the services the trace backend has spans of

    async def _listed(self, tool: str, entity: str) -> bool:
        """A spans read of a service the trace backend has no span of (Jaeger lists the
        services it has) finds nothing and costs nothing."""
        if tool == "spans" and self.incident.sources.traces is not None:
            async with self._lock:
                if self._traced is None:
                    ref, now = await self._span_reads()
                    self._traced = frozenset(SpanTable.of(ref).entity) | frozenset(SpanTable.of(now).entity)
            return entity in self._traced
        return await super()._listed(tool, entity)

    async def _trace_index(self) -> tuple[dict[str, LatencyShift], dict[str, LatencyShift]]:
        async with self._lock:
            if self._own is None or self._gaps is None:
                self._own, self._gaps = {}, {}
                ref_spans, now_spans = await self._span_reads()
                if now_spans or ref_spans:
                    self._own, self._gaps, self._wrong, self._repeats = _LAST_TRACE_INDEX.get(
                        self._trace_sources(), lambda: _index(ref_spans, now_spans), keep="traces" not in self.failed
                    )
            return self._own, self._gaps

    def _trace_sources(self) -> tuple[object, ...]:
        """What the trace index is computed from: the sources and windows (not their spans)."""
        normal = self.incident.normal_for(Modality.TRACES)
        readers = tuple(p.traces for p in normal.parts() if p.traces is not None) if normal is not None else ()
        return (
            self.incident.sources.traces,
            readers,
            normal.window if normal is not None else None,
            self.incident.window,
        )

    @memoised
    async def spans(self, entity: str) -> ToolResult:
        """The service's own-time shift and the network-gap shifts of calls into and out of it."""
        query = SpanQuery(self.incident.window, (entity,)).describe()
        if self.incident.sources.traces is None:
            return ToolResult("spans", entity, query, (), "unavailable")
        own, gaps = await self._trace_index()
        if "traces" in self.failed:
            return ToolResult("spans", entity, query, (), "unavailable")
        items = []
        mine_ = own.get(entity)
        if mine_ is not None and mine_.score >= TRACE_MIN_Z:
            items.append(self._span_evidence(entity, mine_, EvidenceKind.TRACE_SELF_TIME, query))
        for subject, g in gaps.items():
            caller, _, callee = subject.partition("->")
            if entity in (caller, callee) and g.score >= TRACE_MIN_Z:
                items.append(self._span_evidence(entity, g, EvidenceKind.TRACE_EDGE_LATENCY, query))
        for w in self._wrong.values() if self.wrong_answers else ():  # a read of either end shows the calls
            if entity == w.callee or entity in w.callers:
                detail = (
                    f"answered {w.count} of {w.calls} calls from {', '.join(w.callers)} in time and as a success, "
                    "and those callers failed them: its answers were wrong"
                )
                items.append(
                    self._placed(
                        w,
                        Modality.TRACES,
                        EvidenceKind.TRACE_WRONG_ANSWER,
                        w.callee,
                        w.callee,
                        Signal.ERRORS,
                        query,
                        detail,
                    )
                )
        for r in self._repeats.get(entity, []) if self.repeats else ():
            detail = (
                f"gave up on {r.sent} calls {r.subject} before they were answered and sent them again, "
                f"where its requests do so {r.expected:.0f} times normally: a retry storm of its own making"
            )
            placed = self._placed(
                r, Modality.TRACES, EvidenceKind.TRACE_REPEATED_CALLS, entity, r.subject, Signal.TRAFFIC, query, detail
            )
            items.append(replace(placed, peers=(r.callee,)) if r.callee else placed)  # the service it stormed
        found = mine_ is not None or any(entity in s.split("->") for s in gaps)
        return ToolResult("spans", entity, query, tuple(items), "ok" if found else "no_data")

    def edge_share(self, entity: str) -> GapShare:
        """How much of the network-gap shift around an entity is its own, in [0, 1], and which
        of its callees the spans read so far timed its calls to.

        A delay on a service's network slows every call into it, while the calls of its
        callers to other services stay as they were: the share of its incoming calls whose
        gap shifted. A caller whose own side is slow (a starved CPU) instead slows most of
        its outgoing calls: those are blamed on it, not on each callee. 1 without traces.
        """
        gaps = self._gaps
        if not gaps:
            return NO_GAPS
        edges = [(s.split("->", 1), g.score >= TRACE_MIN_Z) for s, g in gaps.items()]
        timed = frozenset(callee for caller, callee in self._timed_calls() if caller == entity)
        out_total: dict[str, int] = defaultdict(int)
        out_shift: dict[str, int] = defaultdict(int)
        for (caller, _), shifted in edges:
            out_total[caller] += 1
            out_shift[caller] += shifted

        def caller_side(a: str) -> bool:
            return out_shift[a] >= 2 and out_shift[a] >= 0.5 * out_total[a]

        incoming = [(caller, shifted) for (caller, callee), shifted in edges if callee == entity]
        own_in = sum(1 for caller, shifted in incoming if shifted and not caller_side(caller))
        share_in = own_in / len(incoming) if incoming else 0.0
        share_out = out_shift[entity] / out_total[entity] if caller_side(entity) else 0.0
        return GapShare(share_in, share_out, timed)

    def _timed_calls(self) -> list[tuple[str, str]]:
        """(caller, callee) of every call whose timing a spans read of either end has shown."""
        calls = [tuple(s.split("->", 1)) for s in self._gaps or ()]
        return [(a, b) for a, b in calls if ("spans", a) in self._done or ("spans", b) in self._done]

    def timed_callers(self) -> set[str]:
        """The services some of whose calls the spans read so far have timed."""
        return {caller for caller, _ in self._timed_calls()}

    def _span_evidence(self, entity: str, s: LatencyShift, kind: EvidenceKind, query: str) -> Evidence:
        what = "own time" if kind is EvidenceKind.TRACE_SELF_TIME else f"network gap {s.subject}"
        detail = (
            f"{what}: p50 {s.normal_p50 * 1e3:.1f} -> {s.now_p50 * 1e3:.1f} ms, "
            f"p90 {s.normal_p90 * 1e3:.1f} -> {s.now_p90 * 1e3:.1f} ms over {s.count} spans"
        )
        return self._placed(s, Modality.TRACES, kind, entity, s.subject, Signal.LATENCY, query, detail)
