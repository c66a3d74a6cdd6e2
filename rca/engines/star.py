"""An engine followed by STAR: the search's trace is audited and, when the audit routes it
there, repaired; the diagnosis is read from the repaired trace."""

from __future__ import annotations

import time
from dataclasses import replace

from rca.engines.lats import SearchEngine, diagnosis_of
from rca.model import Diagnosis, Incident
from rca.star.context import audit_context
from rca.star.memory import RepairMemory
from rca.star.patches import RepairContext
from rca.star.recollect import recollector
from rca.star.repair import RepairConfig, repair
from rca.trace_json import from_json, to_json


class StarEngine:
    """`<engine>+star`: investigate, audit, repair."""

    def __init__(
        self, base: SearchEngine, *, config: RepairConfig = RepairConfig(), memory: RepairMemory | None = None
    ) -> None:
        self.base = base
        self.config = config
        self.memory = memory
        self.name = f"{base.name}+star"

    async def investigate(self, incident: Incident) -> Diagnosis:
        started = time.perf_counter()
        first = await self.base.investigate(incident)
        if first.trace is None:
            return first
        ctx = RepairContext(await audit_context(incident), recollector(incident))
        result = await repair(from_json(dict(first.trace)), ctx, self.config, self.memory)
        doc = to_json(result.trace)
        doc["incident"]["engine"] = self.name
        diagnosis = diagnosis_of(incident, self.name, doc)
        cost = replace(diagnosis.cost, seconds=time.perf_counter() - started)
        return replace(diagnosis, cost=cost)
