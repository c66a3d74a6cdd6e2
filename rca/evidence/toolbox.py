"""The read-only tools an investigation uses: each turns one query into evidence items.

A toolbox belongs to one incident. The heavy part of each modality (reading a window of
logs and mining templates, or computing span timings) runs once, on first use, and each
tool call then returns the evidence for the entity or edge it names, with the query that
produced it.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import networkx as nx
import numpy as np

from rca.errors import DataError
from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.evidence.logs import (
    CutPath,
    TemplateShift,
    cut_paths,
    dependency_errors,
    error_volume,
    line_counts,
    mine,
    new_miner,
    normal_logs,
    template_shifts,
)
from rca.evidence.metrics import MetricShift, metric_shifts, unmatched
from rca.evidence.traces import NO_GAPS, GapShare, LatencyShift, latency_shifts, timings
from rca.model import Incident, LineCounts, LogRecord, Modality, Series, Span, SpanTable, to_iso
from rca.signals import Signal, is_host_metric
from rca.sources.protocols import (
    LineCountSource,
    LogQuery,
    LogSource,
    MetricQuery,
    ServiceListSource,
    SpanQuery,
    is_error,
)

T = TypeVar("T")


_Index = tuple[dict[str, LatencyShift], dict[str, LatencyShift]]


def _index(ref: Sequence[Span], now: Sequence[Span]) -> _Index:
    """Own-time and network-gap shifts, by service and by call edge."""
    (o0, g0), (o1, g1) = timings(ref), timings(now)
    return {s.subject: s for s in latency_shifts(o0, o1)}, {s.subject: s for s in latency_shifts(g0, g1)}


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


def _known(t: float) -> float | None:
    """A time the log extractors give as nan when there is none, as evidence holds it."""
    return t if np.isfinite(t) else None

METRIC_MIN_Z = 3.0
LOG_MIN_Z = 3.0
MAX_CUTS = 2  # code paths cut short, per service
TRACE_MIN_Z = 3.0
READ_TIMEOUT = 120.0  # the longest any one backend read may take; each source bounds its own queries first


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one tool call returned: evidence, or a plain reason why there is none."""

    tool: str
    target: str
    query: str
    evidence: tuple[Evidence, ...]
    status: str = "ok"  # ok | no_data | unavailable
    leads: tuple[str, ...] = ()  # entities a scan ranked, most anomalous first


def _memoised(tool: Callable[[Toolbox, str], Awaitable[ToolResult]]) -> Callable[[Toolbox, str], Awaitable[ToolResult]]:
    """A read repeated within an investigation costs nothing and finds the same evidence (the
    same ids): the window and sources do not change while it runs. A first read is charged to
    the read budget (see `Toolbox.cost`) unless the backend holds nothing of the service;
    past the budget it returns nothing, said once."""

    @functools.wraps(tool)
    async def read(self: Toolbox, entity: str) -> ToolResult:
        key = (tool.__name__, entity)
        if key not in self._done:
            if await self._listed(tool.__name__, entity) and not self._charge(self.cost(tool.__name__)):
                return ToolResult(tool.__name__, entity, f"{tool.__name__}{{entity={entity}}}", (), "budget")
            self._done[key] = await tool(self, entity)
        return self._done[key]

    return read


# What one read costs against the budget, as the live backends are queried: one PromQL range
# query reads every service's metrics at once (a scan of them, after which each service's
# metrics are already read); a Loki query covers one service's selector, a Jaeger search one
# service, so a scan of logs or traces costs one read per service it has not read yet.
BULK = frozenset(["metrics"])
SCAN_LEADS = 3  # a scan's first leads: what a sound investigation has examined (the search reads them, the audit checks)


class Toolbox:
    """Evidence tools over one incident's sources."""

    def __init__(self, incident: Incident, *, budget: int | None = None, glance: bool = True,
                 peer_spread: bool = True) -> None:  # fmt: skip
        self.incident = incident
        self.budget = budget  # reads an investigation may make; None: as many as it wants
        self.glance = glance  # a logs scan the budget cannot pay for may fall back on one aggregate query
        self.peer_spread = peer_spread  # a metric normal that never moved is measured in its peers' spread
        self.reads = 0  # reads made so far (repeats are free)
        self._ids = itertools.count(1)
        self._done: dict[tuple[str, str], ToolResult] = {}  # (tool, entity) -> its result, read once
        self._bulk: set[str] = set()  # tools a scan has read for every service at once
        self._lock = asyncio.Lock()
        self._metrics: dict[str, list[MetricShift]] | None = None
        self._logs: dict[str, list[TemplateShift]] | None = None
        self._volume: dict[str, float] = {}  # per service, how far its error lines rose (one aggregate query)
        self._cuts: dict[str, list[CutPath]] = {}
        self._peers: dict[tuple[str, str], frozenset[str]] = {}
        self._own: dict[str, LatencyShift] | None = None
        self._gaps: dict[str, LatencyShift] | None = None
        self._read_spans: tuple[Sequence[Span], Sequence[Span]] | None = None
        self._traced: frozenset[str] | None = None  # the services the trace backend has spans of
        self._logged: frozenset[str] | None = None  # the services with log lines in the window, once known
        self._lines_of: frozenset[str] = frozenset()  # the services the window's log lines read came from
        self._graph: nx.DiGraph | None = None
        self.missing: list[str] = list(incident.missing())
        self.failed: set[str] = set()  # modalities whose backend failed while reading

    def modalities(self) -> frozenset[Modality]:
        """The modalities this incident has sources for and that could be read."""
        return frozenset(Modality(m) for m, ok in self.available().items() if ok)

    def available(self) -> dict[str, bool]:
        """Per modality: a source exists and has not failed."""
        return {m: ok and m not in self.failed for m, ok in self.incident.sources.modalities().items()}

    async def _read(self, modality: str, read: Awaitable[T], default: T) -> T:
        """A backend read, bounded; a failure marks the modality unavailable and says why."""
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                return await read
        except (DataError, TimeoutError) as exc:
            if modality not in self.failed:
                self.failed.add(modality)
                reason = str(exc) or f"no answer within {READ_TIMEOUT:.0f} s"
                self.missing.append(f"{modality}: unavailable ({reason[:200]})")
            return default

    def _say_if_empty(self, modality: str, records: Sequence[object]) -> None:
        """A source that answered but holds nothing for the window is missing all the same."""
        if not records and modality not in self.failed:
            self.missing.append(f"{modality}: no records in the window")

    def _say_coverage(self, series: Sequence[Series]) -> None:
        """Where the data hold less of the window than was asked (a gap of more than two
        samples at either end), say which part they cover."""
        held = [s for s in series if len(s)]
        if not held:
            return
        first = min(float(s.timestamps[0]) for s in held)
        last = max(float(s.timestamps[-1]) for s in held)
        steps = [float(np.median(np.diff(s.timestamps))) for s in held if len(s) > 1]
        step = float(np.median(steps)) if steps else 0.0
        window = self.incident.window
        if first - window.start > 2 * step or window.end - last > 2 * step:
            self.missing.append(f"metrics cover only {to_iso(first)} to {to_iso(last)} of the window asked "
                                f"({(last - first) / 60:.0f} of {window.seconds / 60:.0f} min)")  # fmt: skip

    @property
    def exhausted(self) -> bool:
        return self.budget is not None and self.reads >= self.budget

    async def _listed(self, tool: str, entity: str) -> bool:
        """Whether the backend a tool reads holds the service at all, as the backends tell for
        free (Jaeger lists the services it has spans of, Loki the label values of a window): a
        read of one it does not hold finds nothing and costs nothing."""
        if tool == "spans" and self.incident.sources.traces is not None:
            async with self._lock:
                if self._traced is None:
                    ref, now = await self._span_reads()
                    self._traced = frozenset(SpanTable.of(ref).entity) | frozenset(SpanTable.of(now).entity)
            return entity in self._traced
        src = self.incident.sources.logs
        if tool == "logs" and src is not None:
            if self._logged is None:
                self._logged = await self._services_logged(src)
            return self._logged is None or entity in self._logged
        return True

    async def _services_logged(self, src: LogSource) -> frozenset[str] | None:
        """The services with lines in the window: as a backend that can list them says (no
        line read), else from the lines of the window (a recorded source holds them anyway);
        None where the backend cannot say (every read is then charged)."""
        if not isinstance(src, ServiceListSource):
            await self._log_index()
            return self._lines_of
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                return frozenset(await src.services(self.incident.window))
        except (DataError, TimeoutError):
            return None

    def cost(self, tool: str) -> int:
        """Reads a first call of this tool on one service costs (0 after a bulk read of it)."""
        return 0 if tool in self._bulk else 1

    def _affordable(self, reads: int) -> bool:
        return self.budget is None or self.reads + reads <= self.budget

    async def _glance_at_logs(self, top: int) -> ToolResult:
        """Where the budget cannot pay for every service's log lines, one aggregate read (each
        service's lines counted, all and those that report a failure) ranks whose lines to read
        first: the services whose error lines rose most (`error_volume`). It reads no service's
        lines: each still costs a read of its own."""
        query = f"sum by (service) (count_over_time(logs[1m]), failing and all)[{self.incident.window.to_iso()}]"
        if not self._charge(1):
            return ToolResult("scan", "logs", query, (), "budget")
        volume = await self._counted_volume()
        if volume is None:  # a backend that cannot count: the counts of the lines read for the index
            await self._log_index()
            volume = self._volume
        rose = sorted((e for e, z in volume.items() if z >= LOG_MIN_Z), key=lambda e: (-volume[e], e))
        leads = tuple(rose[:top])
        return ToolResult("scan", "logs", query, (), "ok" if leads else "no_data", leads)

    async def _counted_volume(self) -> dict[str, float] | None:
        """How far each service's error lines rose, from the backend's own counts of the
        window and of the look-back (no line read); None where the backend cannot count."""
        src = self.incident.sources.logs
        if not isinstance(src, LineCountSource) or "logs" in self.failed:
            return None
        normal = self.incident.normal_for(Modality.LOGS)
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                stretches = (self.incident.window,) if normal is None else (self.incident.window, normal.window)
                now, *before = await asyncio.gather(*(src.line_counts(w) for w in stretches))
        except (DataError, TimeoutError) as exc:  # a backend that cannot count (an older one, a proxy): read lines
            self.missing.append(f"logs: line counts unavailable ({str(exc)[:200] or 'no answer'}); the glance "
                                "counted the lines it read instead")  # fmt: skip
            return None
        return error_volume(before[0] if before else LineCounts({}, {}, 1.0), now)

    def _charge(self, reads: int) -> bool:
        """Spend reads from the budget; False, and said once, when they are not there."""
        if not self._affordable(reads):
            note = f"read budget of {self.budget} spent: the search decided on what it had read"
            if note not in self.missing:
                self.missing.append(note)
            return False
        self.reads += reads
        return True

    def _next_id(self) -> EvidenceId:
        return EvidenceId(f"ev-{next(self._ids)}")

    async def topology(self) -> nx.DiGraph:
        """The call graph, caller -> callee; empty when no topology source exists."""
        if self._graph is None:
            src = self.incident.sources.topology
            graph = await self._read("topology", src.topology(), nx.DiGraph()) if src is not None else nx.DiGraph()
            if src is None:
                self.missing.append("topology: absent")
            elif "topology" not in self.failed and graph.number_of_edges() == 0:
                self.missing.append("topology: no calls seen")
            self._graph = graph
        return self._graph

    async def entities(self) -> tuple[str, ...]:
        """Every entity seen by any source."""
        names = set((await self.topology()).nodes)
        if self.incident.sources.metrics is not None and "metrics" not in self.failed:
            names.update(await self._read("metrics", self.incident.sources.metrics.entities(), ()))
        if not names:  # no call graph and no metric catalogue: the services that logged or traced
            if self.incident.sources.logs is not None:
                names.update(await self._log_index())
            if self.incident.sources.traces is not None:
                own, gaps = await self._trace_index()
                names.update(own)
                names.update(part for edge in gaps for part in edge.split("->"))
        return tuple(sorted(str(n) for n in names))

    # -- metrics -----------------------------------------------------------------------
    async def _metric_index(self) -> dict[str, list[MetricShift]]:
        async with self._lock:
            if self._metrics is None:
                self._metrics = {}
                src = self.incident.sources.metrics
                if src is not None:
                    now = await self._read("metrics", src.series(MetricQuery(self.incident.window)), [])
                    self._say_if_empty("metrics", now)
                    self._say_coverage(now)
                    normal = self.incident.normal_for(Modality.METRICS)
                    ref = []
                    if normal is not None and normal.sources.metrics is not None and "metrics" not in self.failed:
                        ref = await self._read("metrics", normal.sources.metrics.series(MetricQuery(normal.window)), [])
                    elif normal is None or normal.sources.metrics is None:
                        self.missing.append("normal metrics: absent, the start of the window serves")
                    free = []  # read only where the look-back leaves a series without a normal
                    if (normal is not None and normal.fault_free is not None and normal.fault_free.metrics is not None
                            and len(lacking := unmatched(ref, now))):  # fmt: skip
                        query = MetricQuery(normal.window, tuple(sorted({e for e, _, _ in lacking})))
                        free = await self._read("metrics", normal.fault_free.metrics.series(query), [])
                        self.missing.append(f"normal metrics: {len(lacking)} series with nothing recorded before "
                                            "the window, measured against the stretch recorded apart")  # fmt: skip
                    for m in metric_shifts(ref, now, free, peers=self.peer_spread):
                        self._metrics.setdefault(m.entity, []).append(m)
            return self._metrics

    @_memoised
    async def metrics(self, entity: str) -> ToolResult:
        """Series of one entity that left their normal range."""
        query = MetricQuery(self.incident.window, (entity,)).describe()
        if self.incident.sources.metrics is None:
            return ToolResult("metrics", entity, query, (), "unavailable")
        shifts = (await self._metric_index()).get(entity, [])
        if "metrics" in self.failed:
            return ToolResult("metrics", entity, query, (), "unavailable")
        best: dict[tuple[Signal, bool], MetricShift] = {}
        for m in shifts:
            if m.score < METRIC_MIN_Z:
                continue
            key = (m.signal, is_host_metric(m.metric))
            if key not in best or m.score > best[key].score:
                best[key] = m
        items = tuple(self._metric_evidence(m, query) for m in sorted(best.values(), key=lambda m: -m.score))
        return ToolResult("metrics", entity, query, items, "ok" if shifts else "no_data")

    def _metric_evidence(self, m: MetricShift, query: str) -> Evidence:
        arrow = "rose" if m.direction > 0 else "fell"
        return Evidence(
            id=self._next_id(), modality=Modality.METRICS, kind=EvidenceKind.METRIC_SHIFT,
            entity=m.entity, subject=m.metric, score=m.score,
            signal=m.signal,
            query=query, onset=m.onset, direction=m.direction, profile=m.profile, until=m.until,
            under_way=m.under_way,
            detail=f"{m.metric} {arrow} to {m.peak:.4g} (normal {m.normal_median:.4g}, robust z {m.score:.1f})"
            + (" [host]" if is_host_metric(m.metric) else ""),
        )  # fmt: skip

    # -- logs --------------------------------------------------------------------------
    async def _log_index(self) -> dict[str, list[TemplateShift]]:
        async with self._lock:
            if self._logs is None:
                src = self.incident.sources.logs
                self._logs = {}
                if src is not None:
                    now_records = await self._read("logs", src.records(LogQuery(self.incident.window)), [])
                    self._say_if_empty("logs", now_records)
                    if now_records:  # a window without a single line read lacks logs; it is not a silent system
                        self._logs = await self._index_logs(now_records)
                        self._lines_of = frozenset(r.entity for r in now_records)
            return self._logs

    async def _index_logs(self, now_records: list[LogRecord]) -> dict[str, list[TemplateShift]]:
        """The window's template shifts per service; its failed calls and cut paths are kept
        beside them (called under the lock)."""
        normal = self.incident.normal_for(Modality.LOGS)
        window = normal.window if normal is not None else self.incident.window
        readers = [p.logs for p in normal.parts()] if normal is not None else []
        if not any(readers):
            self.missing.append("normal logs: absent, every template counts as new")
        reads = [await self._read("logs", r.records(LogQuery(window)), []) if r is not None else [] for r in readers]
        back_records = reads[0] if reads else []  # the look-back's
        free_records = reads[1] if len(reads) > 1 else []  # the fault-free stretch's
        miner = new_miner()
        mined_back, mined_free, now = await asyncio.to_thread(
            lambda: (mine(miner, back_records), mine(miner, free_records), mine(miner, now_records))
        )
        normal_mined = normal_logs(mined_back, mined_free)
        if self.glance and self.budget is not None:  # only a budgeted logs scan glances at them
            self._volume = error_volume(line_counts(normal_mined), line_counts(now))
        shifts: dict[str, list[TemplateShift]] = {}
        for t in template_shifts(normal_mined, now):
            shifts.setdefault(t.entity, []).append(t)
        services = set((await self.topology()).nodes) | {r.entity for r in now_records}
        self._peers = dependency_errors(now, services)
        ref_spans, now_spans = await self._span_reads()
        cuts = await asyncio.to_thread(lambda: cut_paths(
            normal_mined, now, self.incident.window, normal_spans=ref_spans, now_spans=now_spans))
        for c in cuts:
            self._cuts.setdefault(c.entity, []).append(c)
        return shifts

    @_memoised
    async def logs(self, entity: str) -> ToolResult:
        """Templates of one service whose rate changed, error and new ones first."""
        query = LogQuery(self.incident.window, (entity,)).describe()
        if self.incident.sources.logs is None:
            return ToolResult("logs", entity, query, (), "unavailable")
        shifts = (await self._log_index()).get(entity, [])
        if "logs" in self.failed:
            return ToolResult("logs", entity, query, (), "unavailable")
        items = []
        for t in shifts:
            if not t.template.strip():  # blank lines carry nothing to reason about
                continue
            error = is_error(t.template, t.severity)
            if t.score <= -LOG_MIN_Z and not t.is_new:  # a code path the service stopped running
                if error:  # failures that stopped are a recovery, nothing to blame
                    continue
                items.append(Evidence(
                    id=self._next_id(), modality=Modality.LOGS, kind=EvidenceKind.LOG_FREQUENCY_SHIFT,
                    entity=entity, subject=t.template_id, score=-t.score, signal=Signal.OTHER,
                    query=query, direction=-1,
                    detail=f"{t.severity.name} '{t.template[:160]}' ran {t.now_per_min:.1f}/min where the "
                    f"service's volume predicts {t.expected_per_min:.1f}/min (normal {t.normal_per_min:.1f}/min)",
                ))  # fmt: skip
                continue
            if t.score < LOG_MIN_Z:
                continue
            peers = self._peers.get((entity, t.template_id), frozenset())
            kind = (EvidenceKind.LOG_DEPENDENCY_ERROR if peers else EvidenceKind.LOG_ERROR_SHIFT) if error else (
                EvidenceKind.LOG_NEW_TEMPLATE if t.is_new else EvidenceKind.LOG_FREQUENCY_SHIFT)  # fmt: skip
            signal = Signal.ERRORS if error else Signal.OTHER
            state = "new" if t.is_new else f"was {t.normal_per_min:.1f}/min"
            names = f", naming {', '.join(sorted(peers)[:3])}" if peers else ""
            items.append(Evidence(
                id=self._next_id(), modality=Modality.LOGS, kind=kind, entity=entity,
                subject=t.template_id, score=t.score, signal=signal, query=query,
                detail=f"{t.severity.name} '{t.template[:160]}' {t.now_per_min:.1f}/min ({state}{names})",
                onset=_known(t.onset), until=_known(t.until), peers=tuple(sorted(peers)), under_way=t.under_way,
            ))  # fmt: skip
        cuts = [Evidence(
            id=self._next_id(), modality=Modality.LOGS, kind=EvidenceKind.LOG_PATH_CUT, entity=entity,
            subject=f"{c.first_id}->{c.then_id}", score=c.score, signal=Signal.OTHER,
            query=query, direction=-1, onset=_known(c.onset), until=_known(c.until), under_way=c.under_way,
            detail=f"{c.cut} of {c.traces} traces had {c.first} without {c.then} (normally {c.normal_share:.0%} had both)",
        ) for c in self._cuts.get(entity, [])[:MAX_CUTS] if c.score >= LOG_MIN_Z]  # fmt: skip
        items = cuts + items
        return ToolResult("logs", entity, query, tuple(items[:8]), "ok" if shifts else "no_data")

    # -- traces ------------------------------------------------------------------------
    async def _span_reads(self) -> tuple[Sequence[Span], Sequence[Span]]:
        """The normal period's spans and the window's, read once (under the lock): the
        trace tool times them, the log tool finds the requests a service served silently."""
        if self._read_spans is None:
            ref: Sequence[Span] = []
            now: Sequence[Span] = []
            src = self.incident.sources.traces
            if src is not None:
                normal = self.incident.normal_for(Modality.TRACES)
                window = normal.window if normal is not None else self.incident.window
                readers = [p.traces for p in normal.parts() if p.traces is not None] if normal is not None else []
                ref = SpanTable.concat([await self._read("traces", r.spans(SpanQuery(window)), []) for r in readers])
                if not readers:
                    self.missing.append("normal traces: absent, no latency baseline")
                now = await self._read("traces", src.spans(SpanQuery(self.incident.window)), [])
                self._say_if_empty("traces", now)
            self._read_spans = (ref, now)
        return self._read_spans

    async def _trace_index(self) -> tuple[dict[str, LatencyShift], dict[str, LatencyShift]]:
        async with self._lock:
            if self._own is None or self._gaps is None:
                self._own, self._gaps = {}, {}
                ref_spans, now_spans = await self._span_reads()
                if now_spans or ref_spans:
                    self._own, self._gaps = _LAST_TRACE_INDEX.get(self._trace_sources(), lambda: _index(ref_spans, now_spans),
                                                                  keep="traces" not in self.failed)  # fmt: skip
            return self._own, self._gaps

    def _trace_sources(self) -> tuple[object, ...]:
        """What the trace index is computed from: the sources and windows (not their spans)."""
        normal = self.incident.normal_for(Modality.TRACES)
        readers = tuple(p.traces for p in normal.parts() if p.traces is not None) if normal is not None else ()
        return (self.incident.sources.traces, readers, normal.window if normal is not None else None, self.incident.window)

    @_memoised
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
        return Evidence(
            id=self._next_id(), modality=Modality.TRACES, kind=kind, entity=entity,
            subject=s.subject, score=s.score, signal=Signal.LATENCY, query=query, onset=s.onset,
            profile=s.profile, until=s.until, under_way=s.under_way,
            detail=f"{what}: p50 {s.normal_p50 * 1e3:.1f} -> {s.now_p50 * 1e3:.1f} ms, "
            f"p90 {s.normal_p90 * 1e3:.1f} -> {s.now_p90 * 1e3:.1f} ms over {s.count} spans",
        )  # fmt: skip

    async def survey(self) -> list[Evidence]:
        """Every tool on every entity (and the symptom): what an exhaustive reading finds,
        with no search. The baseline the search is measured against, and what the
        perturbation bench scores many times over."""
        targets = dict.fromkeys([*await self.entities(), self.incident.symptom] if self.incident.symptom else await self.entities())
        found: list[Evidence] = []
        for entity in targets:
            for tool in (self.metrics, self.logs, self.spans):
                found.extend((await tool(entity)).evidence)
        return found

    async def scan(self, modality: str, *, top: int = 8) -> ToolResult:
        """The entities whose telemetry of one modality stands out most, without the detail.

        Like a glance at a dashboard sorted by anomaly: each entity's evidence of that
        modality is weighed as hypotheses are, and the leaders are named.
        """
        from rca.hypotheses import score_hypotheses

        query = f"scan {modality}[{self.incident.window.to_iso()}]"
        tool = {"metrics": self.metrics, "logs": self.logs, "traces": self.spans}.get(modality)
        present = self.available().get(modality, False)
        if tool is None or not present:
            return ToolResult("scan", modality, query, (), "unavailable")
        entities = await self.entities()
        name = {"traces": "spans"}.get(modality, modality)
        cost = 1 if name in BULK else len([e for e in entities if (name, e) not in self._done and await self._listed(name, e)])
        if name == "logs" and self.glance and not self._affordable(cost):
            return await self._glance_at_logs(top)
        if not self._charge(cost):
            return ToolResult("scan", modality, query, (), "budget")
        self._bulk.add(name)  # paid for above: the reads below cost nothing more
        try:
            evidence = [ev for e in entities for ev in (await tool(e)).evidence]
        finally:
            if name not in BULK:  # only one metrics query reads every service for later too
                self._bulk.discard(name)
        ranked = score_hypotheses(
            evidence, graph=await self.topology(), window=self.incident.window,
            symptom=self.incident.symptom, modalities=self.modalities(), edge_share=self.edge_share,
            alert_time=self.incident.alert_time,
        )  # fmt: skip
        leads = tuple(h.service for h in ranked[:top])
        return ToolResult("scan", modality, query, (), "ok" if leads else "no_data", leads)



