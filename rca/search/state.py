"""What a reasoner sees of a diagnostic state, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from rca.evidence import Evidence
from rca.hypotheses import Hypothesis
from rca.search.actions import Action, AgentKind, Tool
from rca.search.tree import Reflection
from rca.telemetry import Window


@dataclass(frozen=True, slots=True)
class DiagnosticState:
    """Observations and active hypotheses at one node of one agent's tree."""

    agent: AgentKind
    symptom: str
    window: Window
    graph: nx.DiGraph = field(compare=False)
    scope: frozenset[str]
    evidence: tuple[Evidence, ...]
    hypotheses: tuple[Hypothesis, ...]
    tried: frozenset[str]
    leads: tuple[str, ...]
    tools: tuple[Tool, ...]
    handoff: str = ""
    scanned: tuple[str, ...] = ()  # what this agent's glance over its own modality ranked, best first

    def top(self) -> Hypothesis | None:
        return self.hypotheses[0] if self.hypotheses else None

    def value_of(self, entity: str) -> float:
        return next((h.value for h in self.hypotheses if h.service == entity), 0.0)


@dataclass(frozen=True, slots=True)
class Step:
    """One executed candidate action and what it changed."""

    action: Action
    new_evidence: tuple[Evidence, ...]
    status: str
    after: DiagnosticState


__all__ = ["Action", "DiagnosticState", "Reflection", "Step"]
