"""The progress stream of an investigation: what a live view renders as it happens."""

from __future__ import annotations

from dataclasses import dataclass, fields

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


@dataclass(frozen=True, slots=True)
class Restarted:
    """The investigation started over: the process running it stopped and another took it up."""

    attempt: int
    reason: str


@dataclass(frozen=True, slots=True)
class Waiting:
    """The investigation is held up by something outside it (its job queue is unreachable)."""

    reason: str


Event = IterationStarted | ActionTaken | EvidenceFound | HypothesesRanked | Handoff | Finished | Restarted | Waiting

_KINDS: dict[str, type] = {
    c.__name__: c
    for c in (IterationStarted, ActionTaken, EvidenceFound, HypothesesRanked, Handoff, Finished, Restarted, Waiting)
}


def event_to_json(event: Event) -> dict[str, object]:
    """An event as plain JSON, for a progress stream between processes."""
    doc: dict[str, object] = {"kind": type(event).__name__}
    for f in fields(event):
        value = getattr(event, f.name)
        doc[f.name] = value.value if isinstance(value, AgentKind) else value
    return doc


def event_from_json(doc: dict[str, object]) -> Event:
    """The event `event_to_json` wrote; ValueError for anything else."""
    kind = _KINDS.get(str(doc.get("kind")))
    if kind is None:
        raise ValueError(f"not a progress event: {str(doc.get('kind'))[:40]!r}")
    values = {}
    for f in fields(kind):
        value = doc[f.name]
        if f.name in ("agent", "source", "target"):
            value = AgentKind(str(value))
        elif f.name == "top":
            value = tuple(tuple(item) for item in value)  # type: ignore[attr-defined]
        values[f.name] = value
    return kind(**values)  # type: ignore[no-any-return]
