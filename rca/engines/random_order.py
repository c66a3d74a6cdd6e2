"""A random read order: the floor a search that chooses its reads must beat under a budget.

It reads one service's metrics, logs or spans at a time in an order drawn at random (seeded by
the incident, so a run repeats), stops when the read budget is spent, and scores what it read
as lats does (rca.hypotheses). With no budget it reads everything and ranks as exhaustive
scoring does; under a budget, the gap between it and lats is what choosing reads is worth.
"""

from __future__ import annotations

import hashlib
import random
import time

from rca.decision import confidences
from rca.evidence import Evidence
from rca.evidence.toolbox import Toolbox
from rca.hypotheses import score_hypotheses
from rca.model import Candidate, Cost, Diagnosis, Incident

# the toolbox's read of each modality
_READS = {"metrics": "metrics", "logs": "logs", "traces": "spans"}


class RandomOrderEngine:
    def __init__(self, *, read_budget: int | None = None, seed: int = 0) -> None:
        self.read_budget = read_budget
        self.seed = seed
        self.name = "random" if seed == 0 else f"random@seed{seed}"

    async def investigate(self, incident: Incident) -> Diagnosis:
        started = time.perf_counter()
        box = Toolbox(incident, budget=self.read_budget)
        entities = await box.entities()
        reads = [(tool, e) for modality, tool in _READS.items() if box.available().get(modality) for e in entities]
        digest = hashlib.sha256(f"{self.seed}:{incident.id}".encode()).digest()
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(reads)
        evidence: list[Evidence] = []
        for tool, entity in reads:
            result = await getattr(box, tool)(entity)
            if result.status == "budget":  # refused, and said in `missing`: decide on what was read
                break
            evidence.extend(result.evidence)
        ranked = score_hypotheses(
            evidence,
            graph=await box.topology(),
            window=incident.window,
            symptom=incident.symptom,
            modalities=box.modalities(),
            edge_share=box.edge_share,
            alert_time=incident.alert_time,
            changes=incident.changes,
        )
        ranking = tuple(
            Candidate(h.service, c, h.fault_type, (h.rationale,))
            for h, c in zip(ranked, confidences(ranked), strict=True)
        )
        cost = Cost(
            seconds=time.perf_counter() - started, hypotheses=len(ranked), evidence_items=len(evidence), reads=box.reads
        )
        return Diagnosis(incident.id, self.name, ranking, tuple(box.missing), cost)
