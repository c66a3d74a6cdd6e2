"""The read-only tools an investigation uses: each turns one query into evidence items.

A toolbox belongs to one incident. The heavy part of each modality (reading a window of
logs and mining templates, or computing span timings) runs once, on first use, and each
tool call then returns the evidence for the entity or edge it names, with the query that
produced it.

The tools are one per modality (metric_tools, log_tools, trace_tools), on the bounded and
budgeted reads they share (reading); the toolbox adds what spans them: the entities, the
survey and the scan.
"""

from __future__ import annotations

from rca.evidence import Evidence
from rca.evidence.log_tools import LogTools
from rca.evidence.metric_tools import MetricTools
from rca.evidence.reading import BULK, ToolResult
from rca.evidence.trace_tools import TraceTools
from rca.model import Incident
from rca.rules.config import ScoringConfig

SCAN_LEADS = (
    3  # a scan's first leads: what a sound investigation has examined (the search reads them, the audit checks)
)


class Toolbox(MetricTools, LogTools, TraceTools):
    """Evidence tools over one incident's sources."""

    def __init__(
        self,
        incident: Incident,
        *,
        budget: int | None = None,
        glance: bool = True,
        peer_spread: bool = True,
        silences: bool = True,
        wrong_answers: bool = True,
        repeats: bool = True,
        scoring: ScoringConfig = ScoringConfig(),
    ) -> None:
        self.scoring = scoring  # how a scan weighs what it reads: the engine's rules
        super().__init__(
            incident,
            budget=budget,
            glance=glance,
            peer_spread=peer_spread,
            silences=silences,
            wrong_answers=wrong_answers,
            repeats=repeats,
        )

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

    async def survey(self) -> list[Evidence]:
        """Every tool on every entity (and the symptom): what an exhaustive reading finds,
        with no search. The baseline the search is measured against, and what the
        perturbation bench scores many times over."""
        targets = dict.fromkeys(
            [*await self.entities(), self.incident.symptom] if self.incident.symptom else await self.entities()
        )
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
        cost = (
            1
            if name in BULK
            else len([e for e in entities if (name, e) not in self._done and await self._listed(name, e)])
        )
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
            evidence,
            graph=await self.topology(),
            window=self.incident.window,
            symptom=self.incident.symptom,
            modalities=self.modalities(),
            edge_share=self.edge_share,
            config=self.scoring,
            alert_time=self.incident.alert_time,
            changes=self.incident.changes,
        )
        leads = tuple(h.service for h in ranked[:top])
        return ToolResult("scan", modality, query, (), "ok" if leads else "no_data", leads)
