"""The offline reasoner: deterministic judgement from the evidence and the call graph.

It plays the three LLM roles of LATS-RCA without a model: proposals are priorities over
untried actions turned into a softmax at temperature 0.7 and sampled with a seeded generator
(so a run is reproducible); reflections score evidence quality, diagnostic completeness and
internal consistency from the state itself; the decision ranks the merged hypotheses.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import networkx as nx

from rca.decision import Decision, decide
from rca.evidence import Evidence, EvidenceKind
from rca.fault_model import saturate
from rca.reasoners import Usage
from rca.search.actions import AGENT_TOOLS, MAIN_TOOL, Action, AgentKind, Tool
from rca.search.state import DiagnosticState, Reflection, Step
from rca.topology import neighbours

_SCAN_TARGET = {AgentKind.METRIC: "metrics", AgentKind.LOG: "logs", AgentKind.TRACE: "traces"}
_LOCALISED = {
    EvidenceKind.TRACE_SELF_TIME,
    EvidenceKind.TRACE_EDGE_LATENCY,
    EvidenceKind.TRACE_WRONG_ANSWER,
    EvidenceKind.TRACE_REPEATED_CALLS,
    EvidenceKind.LOG_ERROR_SHIFT,
    EvidenceKind.LOG_PATH_CUT,
}


class OfflineReasoner:
    name = "offline"

    def __init__(self, *, temperature: float = 0.7) -> None:
        self.temperature = temperature

    def usage(self) -> Usage:
        return Usage()

    def for_investigation(self) -> OfflineReasoner:
        return self  # stateless: one serves every investigation

    async def aclose(self) -> None:
        return None

    # -- propose -----------------------------------------------------------------------
    def priorities(self, state: DiagnosticState) -> dict[Action, float]:
        """Every untried action this agent may take, with how promising it looks."""
        tools = set(AGENT_TOOLS[state.agent]) & set(state.tools)
        out: dict[Action, float] = {}
        scan = Action(Tool.SCAN, _SCAN_TARGET[state.agent])
        if Tool.SCAN in tools and scan.signature not in state.tried:
            # an agent that has seen nothing of its own modality glances over all of it before
            # it follows the other agents' leads, which came from what they could see
            seen = any(e.modality.value == _SCAN_TARGET[state.agent] for e in state.evidence)
            out[scan] = 1.5 if seen else 3.0
        main = MAIN_TOOL[state.agent]
        lead_rank = {e: i for i, e in enumerate(state.leads)}
        scan_rank = {e: i for i, e in enumerate(state.scanned)}
        anomalous = {h.service for h in state.hypotheses[:5]}
        near_top = neighbours(state.graph, anomalous)
        for target in sorted(state.scope | set(state.leads)):
            action = Action(main, target)
            if main not in tools or action.signature in state.tried:
                continue
            p = 0.2
            if target in scan_rank:  # what a glance over this agent's own modality ranked
                p += 2.0 / (1.0 + scan_rank[target])
            elif target in lead_rank:
                p += 1.0 / (1.0 + lead_rank[target])
            p += 0.8 * state.value_of(target)
            p += 0.3 if target in near_top else 0.0
            p += 0.3 if target == state.symptom else 0.0
            out[action] = p
        for h in state.hypotheses[:3]:
            action = Action(Tool.NEIGHBOURS, h.service)
            fresh = neighbours(state.graph, h.service) - state.scope
            if Tool.NEIGHBOURS in tools and fresh and action.signature not in state.tried:
                out[action] = 0.3 + 0.5 * h.value
        onsets = Action(Tool.ONSETS, "scope")
        with_onset = {e.entity for e in state.evidence if e.onset is not None}
        if Tool.ONSETS in tools and len(with_onset) >= 2 and onsets.signature not in state.tried:
            out[onsets] = 0.35
        return out

    async def propose(self, state: DiagnosticState, *, n: int, seed: int) -> list[Action]:
        scored = self.priorities(state)
        if not scored:
            return []
        actions = sorted(scored, key=lambda a: (-scored[a], a.signature))
        top = max(scored.values())
        weights = [math.exp((scored[a] - top) / self.temperature) for a in actions]
        rng = random.Random(seed)
        return rng.choices(actions, weights=weights, k=n)

    # -- reflect -----------------------------------------------------------------------
    async def reflect(self, state: DiagnosticState, steps: Sequence[Step]) -> list[Reflection]:
        return [self.reflection(state, s) for s in steps]

    def reflection(self, before: DiagnosticState, step: Step) -> Reflection:
        after = step.after
        e = _evidence_quality(step)
        c = completeness(after)
        k = consistency(before, after)
        top = after.top()
        note = f"top {top.service} {top.fault_type} {top.value:.2f}" if top else "no hypothesis yet"
        return Reflection(e=e, c_comp=c, k=k, note=note)

    # -- decide ------------------------------------------------------------------------
    async def decide(self, state: DiagnosticState) -> Decision:
        return decide(state.hypotheses, symptom=state.symptom)


def _evidence_quality(step: Step) -> float:
    if step.status == "unavailable":
        return 0.0
    if not step.new_evidence:
        return 0.3 if step.action.tool in (Tool.NEIGHBOURS, Tool.ONSETS, Tool.SCAN) else 0.15
    best = max(saturate(ev.score, 10.0) * (1.0 if ev.onset is not None else 0.8) for ev in step.new_evidence)
    return round(0.3 + 0.7 * best, 4)


def completeness(state: DiagnosticState) -> float:
    """How much of what a diagnosis needs is in the state, for its top hypothesis."""
    top = state.top()
    if top is None:
        return 0.0
    own = [e for e in state.evidence if e.entity == top.service]
    score = 0.3 if any(e.kind in _LOCALISED or e.signal.value in ("cpu", "memory") for e in own) else 0.1
    modalities = {e.modality for e in own}
    score += 0.2 * min(1.0, len(modalities) / 2)
    hood = neighbours(state.graph, top.service)
    score += 0.2 * (len(hood & state.scope) / len(hood) if hood else 1.0)
    score += 0.15 if f"{MAIN_TOOL[state.agent]}:{state.symptom}" in state.tried or not state.symptom else 0.0
    second = state.hypotheses[1].value if len(state.hypotheses) > 1 else 0.0
    score += 0.15 * min(1.0, max(0.0, top.value - second) / 0.1)
    return round(min(1.0, score), 4)


def consistency(before: DiagnosticState, after: DiagnosticState) -> float:
    """1 less penalties for contradictions: a flip-flopping leader, effect before cause."""
    top = after.top()
    if top is None:
        return 0.5
    k = 1.0
    prev = before.top()
    if prev is not None and prev.service != top.service and abs(prev.value - top.value) < 0.05:
        k -= 0.2
    onset = _onset(after.evidence, top.service)
    symptom_onset = _onset(after.evidence, after.symptom)
    if onset is not None and symptom_onset is not None and onset > symptom_onset + 60:
        k -= 0.3
    graph = after.graph
    reachable = (
        after.symptom not in graph
        or top.service not in graph
        or top.service == after.symptom
        or nx.has_path(graph, after.symptom, top.service)
    )
    if not reachable:
        k -= 0.3
    return round(max(0.0, k), 4)


def _onset(evidence: Sequence[Evidence], entity: str) -> float | None:
    times = [e.onset for e in evidence if e.entity == entity and e.onset is not None]
    return min(times) if times else None
