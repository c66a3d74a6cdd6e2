"""One agent's search: its tree, and the four phases of an iteration.

select (UCT) -> expand (the reasoner samples N actions; each distinct one is executed by a
tool) -> reflect (one batched call scores every new state) -> backpropagate
R = w r + (1 - w) sc along the path.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import networkx as nx

from rca.evidence import Evidence, EvidenceId, earliest_onsets
from rca.evidence.reading import ToolResult
from rca.evidence.toolbox import Toolbox
from rca.hypotheses import Hypothesis, score_hypotheses
from rca.reasoners import Reasoner
from rca.search.actions import MAIN_TOOL, Action, AgentKind, Tool
from rca.search.config import SearchConfig
from rca.search.events import ActionTaken, Event, EvidenceFound, HypothesesRanked, IterationStarted
from rca.search.state import DiagnosticState, Step
from rca.search.tree import Node, Reflection, backpropagate, best_node, select, uct
from rca.telemetry import Window
from rca.topology import neighbours


@dataclass(slots=True)
class Shared:
    """What every agent of one investigation shares: tools, evidence by id, node ids."""

    toolbox: Toolbox
    reasoner: Reasoner
    config: SearchConfig
    graph: nx.DiGraph
    symptom: str
    window: Window
    tools: tuple[Tool, ...]
    registry: dict[EvidenceId, Evidence]
    node_ids: itertools.count[int]
    hypotheses_cache: dict[frozenset[EvidenceId], tuple[Hypothesis, ...]]
    seen_hypotheses: set[tuple[str, str]]
    # actions that found no data (or an unavailable source) in any branch of any agent: the
    # same call answers the same way, so no branch spends its budget on them again
    futile: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)  # every action any agent has executed
    checked: set[str] = field(default_factory=set)  # entities read by the closing check, outside the trees

    def hypotheses(self, ids: frozenset[EvidenceId]) -> tuple[Hypothesis, ...]:
        cached = self.hypotheses_cache.get(ids)
        if cached is None:
            evidence = [self.registry[i] for i in sorted(ids, key=_id_order)]
            cached = tuple(
                score_hypotheses(
                    evidence,
                    graph=self.graph,
                    window=self.window,
                    symptom=self.symptom,
                    modalities=self.toolbox.modalities(),
                    edge_share=self.toolbox.edge_share,
                    config=self.config.scoring,
                    alert_time=self.toolbox.incident.alert_time,
                    changes=self.toolbox.incident.changes,
                )
            )
            self.hypotheses_cache[ids] = cached
            self.seen_hypotheses.update((h.service, h.fault_type.value) for h in cached[:5])
        return cached


def _id_order(i: str) -> int:
    return int(i.rsplit("-", 1)[-1])


class AgentSearch:
    """An agent with its own tree over its modality's tools."""

    def __init__(self, kind: AgentKind, shared: Shared) -> None:
        self.kind = kind
        self.shared = shared
        self.root = Node(next(shared.node_ids), None, None, frozenset(), frozenset({shared.symptom} - {""}))
        self.iterations = 0
        self.confirmed = False
        self.handoff_summary = ""
        self.last: Reflection | None = None
        self.scanned: tuple[str, ...] = ()

    def receive(
        self, evidence: frozenset[EvidenceId], scope: frozenset[str], leads: tuple[str, ...], summary: str
    ) -> None:
        """Summary augmentation: q = q_original ⊕ s, on the root and so on every state."""
        self.root.evidence = self.root.evidence | evidence
        self.root.scope = self.root.scope | scope
        self.root.leads = tuple(dict.fromkeys(self.root.leads + leads))
        self.handoff_summary = summary

    def state_of(self, node: Node) -> DiagnosticState:
        path = node.path()
        evidence_ids = frozenset().union(*(n.evidence for n in path))
        scope = frozenset().union(*(n.scope for n in path))
        # what a scan ranked is context for every branch, not only the one that scanned
        leads = tuple(dict.fromkeys(self.scanned + tuple(lead for n in path for lead in n.leads)))
        return DiagnosticState(
            agent=self.kind,
            symptom=self.shared.symptom,
            window=self.shared.window,
            graph=self.shared.graph,
            scope=scope,
            evidence=tuple(self.shared.registry[i] for i in sorted(evidence_ids, key=_id_order)),
            hypotheses=self.shared.hypotheses(evidence_ids),
            tried=frozenset(node.actions_taken()) | self.shared.futile,
            leads=leads,
            tools=self.shared.tools,
            handoff=self.handoff_summary,
            scanned=self.scanned,
        )

    def best_state(self) -> DiagnosticState:
        """The state of the most valuable visited node."""
        return self.state_of(best_node(self.root))

    async def iterate(self) -> AsyncIterator[Event]:
        """One select-expand-reflect-backpropagate iteration."""
        cfg = self.shared.config
        self.iterations += 1
        node = select(self.root, c=cfg.c_uct, max_depth=cfg.max_depth)
        yield IterationStarted(self.kind, self.iterations, node.id, node.depth, uct(node, c=cfg.c_uct))
        state = self.state_of(node)
        seed = cfg.seed * 1_000_003 + node.id * 101 + self.iterations
        proposals = await self.shared.reasoner.propose(state, n=cfg.n_candidates, seed=seed)
        if not proposals:
            node.terminal = True
            backpropagate(node, node.value, enabled=cfg.backprop)
            return
        counts = Counter(a.signature for a in proposals)
        distinct = list(dict.fromkeys(proposals))
        steps, children = [], []
        for action in distinct:
            result = await self._execute(action, state)
            sc = counts[action.signature] / len(proposals)
            yield ActionTaken(self.kind, action.describe(), result.query, result.status, sc)
            for ev in result.evidence:
                yield EvidenceFound(self.kind, ev.id, ev.entity, ev.detail, ev.score)
            child = self._child(node, action, result, state)
            child.sc = sc
            children.append(child)
            steps.append(Step(action, result.evidence, result.status, self.state_of(child)))
        reflections = await self._reflect(state, steps)
        for child, step, refl in zip(children, steps, reflections, strict=True):
            child.reflection = refl
            child.reward = cfg.w * refl.r + (1.0 - cfg.w) * child.sc
            top = step.after.top()
            if child.depth >= cfg.max_depth or (
                top is not None and top.value >= cfg.confirm_value and refl.c_comp >= cfg.confirm_c_comp
            ):
                child.terminal = True
                self.confirmed = self.confirmed or child.depth < cfg.max_depth
            node.children.append(child)
            backpropagate(child, child.reward, enabled=cfg.backprop)
        best = max(zip(children, steps, strict=True), key=lambda cs: cs[0].reward)
        self.last = best[0].reflection
        after = best[1].after
        yield HypothesesRanked(
            self.kind,
            tuple((h.service, h.fault_type.value, h.value) for h in after.hypotheses[:5]),
            best[0].reward,
            self.last.r if self.last else 0.0,
            self.last.c_comp if self.last else 0.0,
        )

    async def _reflect(self, state: DiagnosticState, steps: list[Step]) -> list[Reflection]:
        if not self.shared.config.reflection:
            return [Reflection(0.5, 0.5, 0.5, "reflection disabled") for _ in steps]
        return await self.shared.reasoner.reflect(state, steps)

    async def _execute(self, action: Action, state: DiagnosticState) -> ToolResult:
        box = self.shared.toolbox
        calls: dict[Tool, Callable] = {Tool.METRICS: box.metrics, Tool.LOGS: box.logs, Tool.SPANS: box.spans}
        if action.tool in calls:
            result: ToolResult = await calls[action.tool](action.target)
        elif action.tool is Tool.SCAN:
            result = await box.scan(action.target)
            self.scanned = tuple(dict.fromkeys(self.scanned + result.leads))
        elif action.tool is Tool.NEIGHBOURS:
            hood = neighbours(self.shared.graph, action.target)
            result = ToolResult(
                "neighbours", action.target, f"graph neighbours of {action.target}", (), "ok", tuple(sorted(hood))
            )
        else:
            result = ToolResult("onsets", "scope", "order anomalous entities by onset", (), "ok", _by_onset(state))
        self.shared.done.add(action.signature)
        if result.status != "ok":
            self.shared.futile.add(action.signature)
        for ev in result.evidence:
            self.shared.registry[ev.id] = ev
        return result

    async def look(self, target: str) -> AsyncIterator[Event]:
        """Read one entity with this agent's main tool outside the tree, unless any agent
        already has (the supervisor's closing check)."""
        action = Action(MAIN_TOOL[self.kind], target)
        if action.signature in self.shared.done:  # futile ones included
            return
        result = await self._execute(action, self.state_of(self.root))
        self.shared.checked.add(target)
        yield ActionTaken(self.kind, action.describe(), result.query, result.status, 0.0)
        for ev in result.evidence:
            yield EvidenceFound(self.kind, ev.id, ev.entity, ev.detail, ev.score)

    def _child(self, node: Node, action: Action, result: ToolResult, state: DiagnosticState) -> Node:
        scope = set()
        leads: tuple[str, ...] = ()
        if action.tool in (Tool.METRICS, Tool.LOGS, Tool.SPANS):
            scope.add(action.target)
        elif action.tool is Tool.NEIGHBOURS:
            scope.update(result.leads)
        else:
            leads = result.leads
        return Node(
            next(self.shared.node_ids),
            action,
            node,
            frozenset(ev.id for ev in result.evidence),
            frozenset(scope),
            leads,
            depth=node.depth + 1,
        )


def _by_onset(state: DiagnosticState) -> tuple[str, ...]:
    """Anomalous entities, earliest onset first, each followed by its callees."""
    first = earliest_onsets(state.evidence)
    ordered = sorted(first, key=lambda e: (first[e], e))
    out: list[str] = []
    for e in ordered[:3]:
        out.append(e)
        if e in state.graph:
            out.extend(sorted(state.graph.successors(e)))
    return tuple(dict.fromkeys(out))
