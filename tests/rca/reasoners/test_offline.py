import asyncio
from dataclasses import replace

import networkx as nx

from rca.engines import build_engine
from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.model import Modality
from rca.reasoners.offline import OfflineReasoner
from rca.search.actions import Action, AgentKind, Tool
from rca.search.events import ActionTaken
from rca.search.state import DiagnosticState
from rca.signals import Signal
from rca.sources.datasets import find_cases
from rca.telemetry import Window


def _state(evidence: tuple[Evidence, ...]) -> DiagnosticState:
    return DiagnosticState(
        agent=AgentKind.LOG,
        symptom="front",
        window=Window(0.0, 600.0),
        graph=nx.DiGraph([("front", "a"), ("a", "b")]),
        scope=frozenset({"front", "a"}),
        evidence=evidence,
        hypotheses=(),
        tried=frozenset(),
        leads=("a", "b"),
        tools=tuple(Tool),
    )


def _ev(modality: Modality, kind: EvidenceKind) -> Evidence:
    return Evidence(EvidenceId("ev-1"), modality, kind, "a", "s", 9.0, Signal.OTHER, "q", "d", 300.0)


def test_an_agent_that_saw_nothing_of_its_modality_glances_over_it_first() -> None:
    scan = Action(Tool.SCAN, "logs")

    def lead_over_the_rest(evidence: Evidence) -> float:
        p = OfflineReasoner().priorities(_state((evidence,)))
        return p[scan] - max(v for a, v in p.items() if a != scan)

    # handed the metric agent's leads, the log agent scans first: at temperature 0.7 a lead of
    # one is about four times the weight of any other action
    assert lead_over_the_rest(_ev(Modality.METRICS, EvidenceKind.METRIC_SHIFT)) >= 1.0
    assert lead_over_the_rest(_ev(Modality.LOGS, EvidenceKind.LOG_ERROR_SHIFT)) < 1.0  # it has looked already


def test_a_call_that_found_no_data_is_not_made_again() -> None:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)

    async def actions() -> list[ActionTaken]:
        return [e async for e in build_engine("lats").stream(case.incident) if isinstance(e, ActionTaken)]

    taken = asyncio.run(actions())
    futile = [i for i, a in enumerate(taken) if a.status != "ok" and not a.action.startswith(("expand", "compare"))]
    assert futile  # the slice has services without logs or spans of their own
    for i in futile:
        assert all(later.action != taken[i].action for later in taken[i + 1 :])


def test_what_the_agent_s_own_glance_ranked_first_outweighs_the_other_agents_leads() -> None:
    # handed "a" then "b" by another agent; its own scan of logs ranked "b" first
    state = replace(_state((_ev(Modality.METRICS, EvidenceKind.METRIC_SHIFT),)), tried=frozenset({"scan:logs"}))
    p = OfflineReasoner().priorities(replace(state, scanned=("b",)))
    query = {a.target: v for a, v in p.items() if a.tool is Tool.LOGS}
    # at temperature 0.7 a lead of one is about four times the weight of the next action
    assert query["b"] - max(v for a, v in p.items() if a != Action(Tool.LOGS, "b")) >= 1.0
    assert (
        OfflineReasoner().priorities(state)[Action(Tool.LOGS, "a")]
        > OfflineReasoner().priorities(state)[Action(Tool.LOGS, "b")]
    )
