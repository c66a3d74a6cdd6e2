"""Patch operators (STAR's Table I), one module per stage family.

A patch rewrites one stage's artifact and keeps its schema; the repair loop then replays the
stages downstream of it. `candidates(stage, trace, ctx)` is the offline stage critic: it
proposes the operators that apply to the stage's current violations, most promising first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rca.hypotheses import Hypothesis
from rca.rules.config import ScoringConfig
from rca.star.criteria import AuditContext
from rca.trace import EvidencePackage, Trace, hypothesis_set, replay

PatchFn = Callable[[Trace, "RepairContext"], Awaitable[Trace]]


@dataclass(frozen=True, slots=True)
class Patch:
    stage: str
    name: str  # the patch template, as the repair memory records it
    apply: PatchFn


@dataclass(frozen=True, slots=True)
class RepairContext:
    """What patches and the repair loop use: the audit context, a way to read telemetry again
    (S1), and the reading every replay of a stage scores with."""

    audit: AuditContext
    recollect: Callable[[Trace, tuple[str, ...], float], Awaitable[Trace]] | None = None
    # recollect(trace, entities, widen_share): a new evidence package from the telemetry
    critic: Callable[[str, Any, list[Patch], int], Awaitable[list[Patch]]] | None = None
    # critic(stage, audit, menu, k): a model's order of the offline critic's menu (None: keep it)
    reading: Callable[[], ScoringConfig] = ScoringConfig
    # the scoring each replay of a stage uses, one call per replay: the reasoner's own (the
    # bot: a replay is reproducible), or an independent sampling of it (an evaluation whose
    # replays must not be the function that built the trace)

    def replay(self, trace: Trace, start: str) -> Trace:
        """The stages from `start` on, run again from the artifacts upstream of it."""
        return replay(trace, graph=self.audit.graph, start=start, config=self.reading())

    def hypotheses(self, package: EvidencePackage, symptom: str) -> tuple[Hypothesis, ...]:
        """The hypothesis set derived afresh from a package (a replay of that stage alone)."""
        return hypothesis_set(package, graph=self.audit.graph, symptom=symptom, config=self.reading())


def by_violation(stage: str, table: Mapping[str, tuple[str, PatchFn]], violated: set[str]) -> list[Patch]:
    """A stage critic from a table criterion -> operator: the operators for the violated
    criteria first (in the table's order), then the rest."""
    first = [Patch(stage, *op) for crit, op in table.items() if crit in violated]
    rest = [Patch(stage, *op) for crit, op in table.items() if crit not in violated]
    return first + rest
