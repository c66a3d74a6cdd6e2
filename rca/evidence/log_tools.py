"""The logs tool of a toolbox: templates of one service whose rate changed, its failed calls
and its code paths cut short, from one read and mining of the window's lines (and the normal
stretches') made on first use; and the glance, one aggregate count of every service's error
lines, for a scan the read budget cannot pay for."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from rca.errors import DataError
from rca.evidence import Evidence, EvidenceKind
from rca.evidence.logs import (
    TemplateShift,
    dependency_errors,
    error_volume,
    line_counts,
    mine,
    new_miner,
    normal_logs,
    template_shifts,
)
from rca.evidence.paths import CutPath, cut_paths
from rca.evidence.reading import READ_TIMEOUT, Reader, ToolResult, memoised
from rca.model import Incident, Modality
from rca.signals import Signal
from rca.sources.protocols import LineCountSource, LogQuery, LogSource, ServiceListSource, is_error
from rca.telemetry import LineCounts, LogRecord

LOG_MIN_Z = 3.0
MAX_CUTS = 2  # code paths cut short, per service


def _known(t: float) -> float | None:
    """A time the log extractors give as nan when there is none, as evidence holds it."""
    return t if np.isfinite(t) else None


class LogTools(Reader):
    def __init__(self, incident: Incident, *, glance: bool = True, silences: bool = True, **options: Any) -> None:
        super().__init__(incident, **options)
        self.glance = glance  # a logs scan the budget cannot pay for may fall back on one aggregate query
        self.silences = silences  # a run of a template's lines ends at a silence its rate did not expect
        self._logs: dict[str, list[TemplateShift]] | None = None
        self._volume: dict[str, float] = {}  # per service, how far its error lines rose (one aggregate query)
        self._cuts: dict[str, list[CutPath]] = {}
        self._peers: dict[tuple[str, str], frozenset[str]] = {}
        self._logged: frozenset[str] | None = None  # the services with log lines in the window, once known
        self._lines_of: frozenset[str] = frozenset()  # the services the window's log lines read came from
        self._normal_read = False  # some normal log line was read: a template can be new or shifted against it

    async def _listed(self, tool: str, entity: str) -> bool:
        """A logs read of a service the backend lists no line of (Loki the label values of a
        window) finds nothing and costs nothing."""
        src = self.incident.sources.logs
        if tool == "logs" and src is not None:
            if self._logged is None:
                self._logged = await self._services_logged(src)
            return self._logged is None or entity in self._logged
        return await super()._listed(tool, entity)

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
            self.missing.append(
                f"logs: line counts unavailable ({str(exc)[:200] or 'no answer'}); the glance "
                "counted the lines it read instead"
            )
            return None
        return error_volume(before[0] if before else LineCounts({}, {}, 1.0), now)

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
        reads = [await self._read("logs", r.records(LogQuery(window)), []) if r is not None else [] for r in readers]
        back_records = reads[0] if reads else []  # the look-back's
        free_records = reads[1] if len(reads) > 1 else []  # the fault-free stretch's
        miner = new_miner()
        mined_back, mined_free, now = await asyncio.to_thread(
            lambda: (mine(miner, back_records), mine(miner, free_records), mine(miner, now_records))
        )
        normal_mined = normal_logs(mined_back, mined_free)
        self._normal_read = bool(normal_mined)
        if not normal_mined:
            why = "none read" if any(readers) else "absent"
            self.missing.append(
                f"normal logs: {why}, so no template is new and no rate shifted; error lines still count"
            )
        if self.glance and self.budget is not None:  # only a budgeted logs scan glances at them
            self._volume = error_volume(line_counts(normal_mined), line_counts(now))
        shifts: dict[str, list[TemplateShift]] = {}
        for t in template_shifts(normal_mined, now, silences=self.silences):
            shifts.setdefault(t.entity, []).append(t)
        services = set((await self.topology()).nodes) | {r.entity for r in now_records}
        self._peers = dependency_errors(now, services)
        ref_spans, now_spans = await self._span_reads()
        cuts = await asyncio.to_thread(
            lambda: cut_paths(normal_mined, now, self.incident.window, normal_spans=ref_spans, now_spans=now_spans)
        )
        for c in cuts:
            self._cuts.setdefault(c.entity, []).append(c)
        return shifts

    @memoised
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
            if not error and not self._normal_read:  # new and shifted say nothing without a normal
                continue
            if t.score <= -LOG_MIN_Z and not t.is_new:  # a code path the service stopped running
                if error:  # failures that stopped are a recovery, nothing to blame
                    continue
                items.append(
                    Evidence(
                        id=self._next_id(),
                        modality=Modality.LOGS,
                        kind=EvidenceKind.LOG_FREQUENCY_SHIFT,
                        entity=entity,
                        subject=t.template_id,
                        score=-t.score,
                        signal=Signal.OTHER,
                        query=query,
                        direction=-1,
                        detail=f"{t.severity.name} '{t.template[:160]}' ran {t.now_per_min:.1f}/min where the "
                        f"service's volume predicts {t.expected_per_min:.1f}/min (normal {t.normal_per_min:.1f}/min)",
                    )
                )
                continue
            if t.score < LOG_MIN_Z:
                continue
            peers = self._peers.get((entity, t.template_id), frozenset())
            kind = (
                (EvidenceKind.LOG_DEPENDENCY_ERROR if peers else EvidenceKind.LOG_ERROR_SHIFT)
                if error
                else (EvidenceKind.LOG_NEW_TEMPLATE if t.is_new else EvidenceKind.LOG_FREQUENCY_SHIFT)
            )
            signal = Signal.ERRORS if error else Signal.OTHER
            state = "new" if t.is_new else f"was {t.normal_per_min:.1f}/min"
            names = f", naming {', '.join(sorted(peers)[:3])}" if peers else ""
            items.append(
                Evidence(
                    id=self._next_id(),
                    modality=Modality.LOGS,
                    kind=kind,
                    entity=entity,
                    subject=t.template_id,
                    score=t.score,
                    signal=signal,
                    query=query,
                    detail=f"{t.severity.name} '{t.template[:160]}' {t.now_per_min:.1f}/min ({state}{names})",
                    onset=_known(t.onset),
                    until=_known(t.until),
                    peers=tuple(sorted(peers)),
                    under_way=t.under_way,
                )
            )
        cuts = [
            Evidence(
                id=self._next_id(),
                modality=Modality.LOGS,
                kind=EvidenceKind.LOG_PATH_CUT,
                entity=entity,
                subject=f"{c.first_id}->{c.then_id}",
                score=c.score,
                signal=Signal.OTHER,
                query=query,
                direction=-1,
                onset=_known(c.onset),
                until=_known(c.until),
                under_way=c.under_way,
                detail=f"{c.cut} of {c.traces} traces had {c.first} without {c.then} (normally {c.normal_share:.0%} had both)",
            )
            for c in self._cuts.get(entity, [])[:MAX_CUTS]
            if c.score >= LOG_MIN_Z
        ]
        items = cuts + items
        return ToolResult("logs", entity, query, tuple(items[:8]), "ok" if shifts else "no_data")
