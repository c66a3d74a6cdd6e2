"""The supervisor: runs the agents in turn, hands condensed summaries between them, and
correlates their best states into one decision and its four-stage trace."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence

import networkx as nx

from rca.evidence import EvidenceId
from rca.evidence.toolbox import SCAN_LEADS, Toolbox
from rca.evidence.traces import GapShare
from rca.model import Cost, Incident
from rca.reasoners import Reasoner
from rca.replay import with_window
from rca.rules.timing import REOPEN, opened_back, opened_back_note, opened_late
from rca.search.actions import AGENT_TOOLS, AgentKind, Tool
from rca.search.agents import AgentSearch, Shared
from rca.search.config import SearchConfig
from rca.search.events import Event, Finished, Handoff
from rca.search.state import DiagnosticState
from rca.topology import neighbours, siblings
from rca.trace import EvidencePackage, Trace, analysis_structure, decision_report
from rca.trace_json import to_json


def available_agents(incident: Incident, order: Sequence[AgentKind]) -> list[AgentKind]:
    present = incident.sources.modalities()
    need = {AgentKind.METRIC: "metrics", AgentKind.LOG: "logs", AgentKind.TRACE: "traces"}
    return [a for a in order if present[need[a]]]


def summarise(state: DiagnosticState, *, top: int = 3) -> tuple[frozenset[EvidenceId], str]:
    """The condensed summary an agent hands on: its leading hypotheses and their evidence."""
    hyps = state.hypotheses[:top]
    ids = frozenset(i for h in hyps for i in h.evidence[:4])
    text = "; ".join(f"{h.service} {h.fault_type.value} {h.value:.2f}" for h in hyps) or "nothing anomalous yet"
    return ids, text


async def run_search(
    incident: Incident,
    *,
    reasoner: Reasoner,
    config: SearchConfig,
    order: Sequence[AgentKind] = (AgentKind.METRIC, AgentKind.TRACE, AgentKind.LOG),
    engine: str = "lats",
) -> AsyncIterator[Event]:
    """The investigation as a stream of events; the last one is Finished with the trace."""
    started = time.perf_counter()
    reasoner = reasoner.for_investigation()

    def toolbox_of(incident: Incident) -> Toolbox:
        return Toolbox(
            incident,
            budget=config.read_budget,
            glance=config.glance,
            peer_spread=config.peer_spread,
            silences=config.silences,
            wrong_answers=config.wrong_answers,
            repeats=config.repeats,
            scoring=config.scoring,
        )

    toolbox = toolbox_of(incident)
    graph = await toolbox.topology()
    if (
        config.scoring.on(REOPEN)
        and incident.symptom
        and incident.alert_time is None
        and opened_late(await toolbox.shifts_of(incident.symptom), incident.window)
    ):
        asked = incident.window
        incident = with_window(incident, opened_back(asked))
        toolbox = toolbox_of(incident)
        graph = await toolbox.topology()
        toolbox.missing.append(opened_back_note(incident.symptom, asked))
    kinds = available_agents(incident, order)
    tools = tuple(dict.fromkeys(t for k in kinds for t in AGENT_TOOLS[k]))
    shared = Shared(
        toolbox,
        reasoner,
        config,
        graph,
        incident.symptom,
        incident.window,
        tools or (Tool.SCAN,),
        {},
        itertools.count(1),
        {},
        set(),
    )
    agents = [AgentSearch(k, shared) for k in kinds]
    done = False

    def out_of_time() -> bool:
        return config.time_budget is not None and time.perf_counter() - started > config.time_budget

    def out_of_budget() -> bool:
        return out_of_time() or toolbox.exhausted

    for _round in range(config.rounds):
        for i, agent in enumerate(agents):
            reason = "turn budget spent"
            for _ in range(config.iterations_per_agent):
                if out_of_time():
                    done, reason = True, "time budget spent"
                    toolbox.missing.append(f"time budget of {config.time_budget:g} s spent: the search stopped early")
                    break
                if toolbox.exhausted:
                    done, reason = True, "read budget spent"
                    break
                async for event in agent.iterate():
                    yield event
                if agent.confirmed:
                    done, reason = True, "hypothesis confirmed"
                    break
                last = agent.last
                if (
                    last is not None
                    and agent.iterations >= config.min_iterations_before_handoff
                    and (last.r < config.handoff_r or last.c_comp < config.handoff_c_comp)
                ):
                    reason = f"insufficient progress (r {last.r:.2f}, c_comp {last.c_comp:.2f})"
                    break
            if len(agents) > 1:
                nxt = agents[(i + 1) % len(agents)]
                best = agent.best_state()
                ids, text = summarise(best)
                nxt.receive(ids, best.scope, best.leads, text)
                yield Handoff(agent.kind, nxt.kind, reason, text)
            if done:
                break
        if done:
            break
    async for event in _check_suspects(agents, shared, incident, config.check_top, out_of_budget):
        yield event
    merged = _merge(agents, shared, incident)
    try:
        decision = await reasoner.decide(merged)
    finally:
        await reasoner.aclose()
    trace = _trace(incident, merged, toolbox, engine, agents, shared, started)
    yield Finished(decision.summary, to_json(trace))


CHECK_ROUNDS = 3  # a check that keeps bringing new suspects forward stops after this many


async def _check_suspects(
    agents: list[AgentSearch], shared: Shared, incident: Incident, top: int, out_of_time: Callable[[], bool]
) -> AsyncIterator[Event]:
    """The closing check: each leading suspect and its callers and callees (and an endpoint's
    siblings) read with every agent's tool, where no branch has yet, the symptom itself,
    whose series the suspects' are weighed against, and the first leads of every scan the
    agents made (what the telemetry flags most cannot be ruled out unread). Whether a
    suspect is a victim of a callee or the answer to a caller's changed calls is only told
    from what those neighbours show; what they show may bring a new suspect forward, whose
    neighbourhood is read in turn. It stops where the time budget runs out, like the search."""
    checked: set[str] = set()
    for round_ in range(CHECK_ROUNDS):
        suspects = [h.service for h in _merge(agents, shared, incident).hypotheses[:top]]
        if set(suspects) <= checked:
            return
        first: list[str] = []
        if round_ == 0:
            first = [incident.symptom] if incident.symptom else []
            first += [lead for a in agents for lead in a.scanned[:SCAN_LEADS]]
        targets = dict.fromkeys(
            first + [t for s in suspects if s not in checked for t in (s, *sorted(_checked_around(shared.graph, s)))]
        )
        checked.update(suspects)
        for agent in agents:
            for target in targets:
                if out_of_time():
                    return
                async for event in agent.look(target):
                    yield event


def _checked_around(graph: nx.DiGraph, suspect: str) -> set[str]:
    """Whom a suspect is told apart from: its callers and callees, and for an endpoint that
    calls nothing (seen only from its callers' side), its callers' other callees as well."""
    around = neighbours(graph, suspect)
    if suspect in graph and graph.out_degree(suspect) == 0:
        around |= siblings(graph, suspect)
    return around


def _merge(agents: list[AgentSearch], shared: Shared, incident: Incident) -> DiagnosticState:
    """Correlate the agents: every piece of evidence any of them observed, and their scopes
    along their best paths with what the closing check read."""
    ids: frozenset[EvidenceId] = frozenset(shared.registry)
    scope: frozenset[str] = frozenset(shared.checked)
    for a in agents:
        scope |= a.best_state().scope
    kind = agents[0].kind if agents else AgentKind.METRIC
    return DiagnosticState(
        agent=kind,
        symptom=incident.symptom,
        window=incident.window,
        graph=shared.graph,
        scope=scope,
        evidence=tuple(shared.registry[i] for i in sorted(ids, key=lambda x: int(x[3:]))),
        hypotheses=shared.hypotheses(ids),
        tried=frozenset(),
        leads=(),
        tools=shared.tools,
    )


def _trace(
    incident: Incident,
    state: DiagnosticState,
    toolbox: Toolbox,
    engine: str,
    agents: list[AgentSearch],
    shared: Shared,
    started: float,
) -> Trace:
    entities = {ev.entity for ev in state.evidence} | set(state.scope)
    usage = shared.reasoner.usage()
    ep = EvidencePackage(
        window=incident.window,
        modalities=toolbox.available(),
        scope=tuple(sorted(state.scope)),
        evidence=state.evidence,
        missing=tuple(dict.fromkeys(toolbox.missing)) + usage.notes,
        edge_shares=_edge_shares(toolbox, entities),
        alert_time=incident.alert_time,
        changes=incident.changes,
    )
    hyps = state.hypotheses
    chains = analysis_structure(ep, hyps, graph=shared.graph, symptom=incident.symptom)
    decision = decision_report(ep, hyps, chains, graph=shared.graph, symptom=incident.symptom)
    cost = Cost(
        seconds=time.perf_counter() - started,
        iterations=sum(a.iterations for a in agents),
        hypotheses=len(shared.seen_hypotheses),
        evidence_items=len(shared.registry),
        llm_calls=usage.calls,
        llm_input_tokens=usage.input_tokens,
        llm_output_tokens=usage.output_tokens,
        llm_cached_tokens=usage.cached_tokens,
        reads=toolbox.reads,
        llm_phases=usage.phases,
    )
    return Trace(incident.id, incident.symptom, engine, ep, hyps, chains, decision, cost)


def _edge_shares(toolbox: Toolbox, entities: set[str]) -> dict[str, GapShare]:
    """The gap shares of every entity read, and of every service whose calls the traces
    timed: a replay of the hypotheses weighs those calls as the search did."""
    return {e: toolbox.edge_share(e) for e in sorted(entities | toolbox.timed_callers())}
