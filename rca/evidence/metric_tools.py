"""The metrics tool of a toolbox: the series of one entity that left their normal range, from
one read of every series of the window (and of the normal stretches) made on first use."""

from __future__ import annotations

from typing import Any

from rca.evidence import Evidence, EvidenceKind
from rca.evidence.metrics import MetricShift, metric_shifts, unmatched
from rca.evidence.reading import Reader, ToolResult, memoised
from rca.model import Incident, Modality
from rca.signals import Signal, is_host_metric
from rca.sources.protocols import MetricQuery

METRIC_MIN_Z = 3.0


class MetricTools(Reader):
    def __init__(self, incident: Incident, *, peer_spread: bool = True, **options: Any) -> None:
        super().__init__(incident, **options)
        self.peer_spread = peer_spread  # a metric normal that never moved is measured in its peers' spread
        self._metrics: dict[str, list[MetricShift]] | None = None

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
                    if (
                        normal is not None
                        and normal.fault_free is not None
                        and normal.fault_free.metrics is not None
                        and len(lacking := unmatched(ref, now))
                    ):
                        query = MetricQuery(normal.window, tuple(sorted({e for e, _, _ in lacking})))
                        free = await self._read("metrics", normal.fault_free.metrics.series(query), [])
                        self.missing.append(
                            f"normal metrics: {len(lacking)} series with nothing recorded before "
                            "the window, measured against the stretch recorded apart"
                        )
                    for m in metric_shifts(ref, now, free, peers=self.peer_spread):
                        self._metrics.setdefault(m.entity, []).append(m)
            return self._metrics

    async def shifts_of(self, entity: str) -> list[MetricShift]:
        """One entity's series shifts, as the metrics tool reads them, before any evidence is
        made of them: neither charged to the read budget nor given evidence ids (what an
        investigation looks at before it begins)."""
        return list((await self._metric_index()).get(entity, []))

    @memoised
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
        detail = f"{m.metric} {arrow} to {m.peak:.4g} (normal {m.normal_median:.4g}, robust z {m.score:.1f})" + (
            " [host]" if is_host_metric(m.metric) else ""
        )
        return self._placed(
            m, Modality.METRICS, EvidenceKind.METRIC_SHIFT, m.entity, m.metric, m.signal, query, detail, m.direction
        )
