"""The progress stream of an investigation: what a live view renders as it happens."""

from __future__ import annotations

from dataclasses import dataclass

from rca.search.actions import AgentKind


@dataclass(frozen=True, slots=True)
class IterationStarted:
    agent: AgentKind
    iteration: int
    node: int
    depth: int
    uct: float


@dataclass(frozen=True, slots=True)
class ActionTaken:
    agent: AgentKind
    action: str
    query: str
    status: str
    sc: float


@dataclass(frozen=True, slots=True)
class EvidenceFound:
    agent: AgentKind
    evidence_id: str
    entity: str
    detail: str
    score: float


@dataclass(frozen=True, slots=True)
class HypothesesRanked:
    agent: AgentKind
    top: tuple[tuple[str, str, float], ...]  # (service, fault type, value)
    reward: float
    r: float
    c_comp: float


@dataclass(frozen=True, slots=True)
class Handoff:
    source: AgentKind
    target: AgentKind
    reason: str
    summary: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The last event: the decision and the four-stage trace."""

    summary: str
    trace: dict[str, object]


Event = IterationStarted | ActionTaken | EvidenceFound | HypothesesRanked | Handoff | Finished
