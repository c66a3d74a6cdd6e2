"""The four-stage trace of an investigation, versioned and checked against its JSON Schema.

    evidence package   -> window, modalities, entity scope, evidence items (with queries)
    hypothesis set     -> (service, fault type, value) hypotheses citing evidence ids
    analysis structure -> causal chains in the call graph, with onsets and supporting evidence
    decision report    -> ranking, confidence, recommended verification tests

Each later stage is a function of the earlier ones, so any stage can be replayed from given
upstream artifacts (`replay`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import networkx as nx

from rca.changes import Change
from rca.decision import decide
from rca.evidence import Evidence, EvidenceId, earliest_onsets
from rca.evidence.traces import NO_GAPS, GapShare
from rca.hypotheses import Hypothesis, HypothesisId, score_hypotheses
from rca.model import Cost, Modality
from rca.rules.config import ScoringConfig
from rca.telemetry import Window
from rca.topology import in_causal_order

VERSION = "1"
STAGES = ("evidence_package", "hypothesis_set", "analysis_structure", "decision_report")


@dataclass(frozen=True, slots=True)
class EvidencePackage:
    window: Window
    modalities: dict[str, bool]
    scope: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    missing: tuple[str, ...]
    edge_shares: dict[str, GapShare]
    alert_time: float | None = None  # when the symptom alerted, where known
    changes: tuple[Change, ...] = ()  # what was changed around the window, where recorded

    @property
    def examined(self) -> set[str]:
        """The entities the package looked at: its scope and every entity with evidence."""
        return set(self.scope) | {ev.entity for ev in self.evidence}


@dataclass(frozen=True, slots=True)
class Link:
    id: str
    source: str  # the cause side
    target: str  # the effect side (its caller)
    onset_source: float | None
    onset_target: float | None
    evidence: tuple[EvidenceId, ...]


@dataclass(frozen=True, slots=True)
class Chain:
    hypothesis: HypothesisId
    root: str
    links: tuple[Link, ...]


@dataclass(frozen=True, slots=True)
class VerificationTest:
    """A verification test: a query whose outcome separates hypotheses."""

    id: str
    hypothesis: HypothesisId
    tool: str
    target: str
    query: str
    subject: str  # the metric, log template or call the query looks at
    expected: tuple[tuple[HypothesisId, str], ...]  # per hypothesis it separates: anomalous | normal
    rationale: str


@dataclass(frozen=True, slots=True)
class DecisionReport:
    ranking: tuple[tuple[str, str, float, str], ...]  # service, fault type, confidence, hypothesis
    confidence: float
    summary: str
    tests: tuple[VerificationTest, ...]


@dataclass(frozen=True, slots=True)
class Trace:
    incident: str
    symptom: str
    engine: str
    evidence_package: EvidencePackage
    hypotheses: tuple[Hypothesis, ...]
    chains: tuple[Chain, ...]
    decision: DecisionReport
    cost: Cost = Cost()


# -- stages ---------------------------------------------------------------------------------
def hypothesis_set(
    ep: EvidencePackage, *, graph: nx.DiGraph, symptom: str, config: ScoringConfig = ScoringConfig()
) -> tuple[Hypothesis, ...]:
    """Stage 2 from stage 1."""
    return tuple(
        score_hypotheses(
            ep.evidence,
            graph=graph,
            window=ep.window,
            symptom=symptom,
            modalities=frozenset(Modality(m) for m, ok in ep.modalities.items() if ok),
            edge_share=lambda e: ep.edge_shares.get(e, NO_GAPS),
            config=config,
            alert_time=ep.alert_time,
            changes=ep.changes,
        )
    )


def analysis_structure(
    ep: EvidencePackage, hypotheses: tuple[Hypothesis, ...], *, graph: nx.DiGraph, symptom: str, top: int = 3
) -> tuple[Chain, ...]:
    """Stage 3: for the leading hypotheses, the call path from the root cause up to the symptom.

    A step of the path becomes a causal link only where the telemetry supports it: the callee
    (the cause side) has evidence, and its anomaly did not begin after its caller's.
    """
    index = _onsets_and_cites(ep)
    return tuple(_chain(h, _call_path(graph, symptom, h.service), *index) for h in hypotheses[:top])


def chain_along(ep: EvidencePackage, h: Hypothesis, path: list[str]) -> Chain:
    """The causal chain of a hypothesis along one call path (symptom first, its root last):
    a link for each step whose callee has evidence and did not start after its caller."""
    return _chain(h, path, *_onsets_and_cites(ep))


def _onsets_and_cites(ep: EvidencePackage) -> tuple[dict[str, float], dict[str, list[EvidenceId]]]:
    """Per entity, when its anomaly began and the ids of its evidence."""
    cites: dict[str, list[EvidenceId]] = {}
    for ev in ep.evidence:
        cites.setdefault(ev.entity, []).append(ev.id)
    return earliest_onsets(ep.evidence), cites


def _chain(h: Hypothesis, path: list[str], onsets: dict[str, float], cites: dict[str, list[EvidenceId]]) -> Chain:
    links = []
    for i, (callee, caller) in enumerate(itertools.pairwise(path[::-1])):
        if not cites.get(callee) or not in_causal_order(onsets.get(callee), onsets.get(caller)):
            continue
        ids = tuple(cites.get(callee, [])[:3] + cites.get(caller, [])[:3])
        links.append(Link(f"{h.id}-l{i + 1}", callee, caller, onsets.get(callee), onsets.get(caller), ids))
    return Chain(h.id, h.service, tuple(links))


def _call_path(graph: nx.DiGraph, symptom: str, root: str) -> list[str]:
    if symptom == root or symptom not in graph or root not in graph:
        return [root]
    try:
        return list(nx.shortest_path(graph, symptom, root))
    except nx.NetworkXNoPath:
        return [root]


def is_call(link: Link, graph: nx.DiGraph) -> bool:
    """The link's effect side calls its cause side."""
    return bool(graph.has_edge(link.target, link.source))


def in_order(link: Link) -> bool:
    """The link's cause did not start after its effect (a link without both onsets passes)."""
    return (
        link.onset_source is None or link.onset_target is None or in_causal_order(link.onset_source, link.onset_target)
    )


def supported(link: Link, by_id: dict[EvidenceId, Evidence]) -> bool:
    """The link cites telemetry of its cause side."""
    return any(i in by_id and by_id[i].entity == link.source for i in link.evidence)


def analysed_order(
    hypotheses: tuple[Hypothesis, ...], chains: tuple[Chain, ...], *, graph: nx.DiGraph, evidence: tuple[Evidence, ...]
) -> tuple[Hypothesis, ...]:
    """The hypotheses in the order the decision weighs them: among those the analysis chained
    to the symptom, a cause whose chain it holds broken (a link that is no call, puts the
    effect first, or cites nothing of its cause) comes after those whose chain holds; each
    group, and every hypothesis not analysed, keeps its place by value."""
    by_id = {ev.id: ev for ev in evidence}
    broken = {
        c.hypothesis: not all(is_call(ln, graph) and in_order(ln) and supported(ln, by_id) for ln in c.links)
        for c in chains
    }
    places = [i for i, h in enumerate(hypotheses) if h.id in broken]
    out = list(hypotheses)
    for i, h in zip(places, sorted((hypotheses[i] for i in places), key=lambda h: broken[h.id]), strict=True):
        out[i] = h
    return tuple(out)


def decision_report(
    ep: EvidencePackage,
    hypotheses: tuple[Hypothesis, ...],
    chains: tuple[Chain, ...],
    *,
    graph: nx.DiGraph,
    symptom: str,
) -> DecisionReport:
    """Stage 4, from the analysis: ranking with confidence, and a test per leading hypothesis."""
    hypotheses = analysed_order(hypotheses, chains, graph=graph, evidence=ep.evidence)
    decision = decide(hypotheses, symptom=symptom)
    by_id = {ev.id: ev for ev in ep.evidence}
    tests: list[VerificationTest] = []
    leaders = hypotheses[:3]
    for h in leaders:
        cited = [by_id[i] for i in h.evidence if i in by_id]
        if not cited:
            continue
        strongest = max(cited, key=lambda ev: ev.score)
        tool = {Modality.METRICS: "metrics", Modality.LOGS: "logs", Modality.TRACES: "spans"}[strongest.modality]
        expected = tuple((other.id, "anomalous" if other.service == h.service else "normal") for other in leaders)
        tests.append(
            VerificationTest(
                f"t-{len(tests) + 1}",
                h.id,
                tool,
                strongest.entity,
                strongest.query,
                strongest.subject,
                expected,
                f"{strongest.subject} at {strongest.entity} is anomalous if {h.service} "
                f"({h.fault_type.value}) is the cause, and normal if another leading hypothesis is",
            )
        )
    ranking = tuple((c.service, c.fault_type, c.confidence, c.hypothesis) for c in decision.ranking)
    return DecisionReport(ranking, decision.confidence, decision.summary, tuple(tests))


def replay(
    trace: Trace, *, graph: nx.DiGraph, start: str = "hypothesis_set", config: ScoringConfig = ScoringConfig()
) -> Trace:
    """Re-run the stages from `start` on, from the artifacts upstream of it."""
    if start not in STAGES[1:]:
        raise ValueError(f"can replay from {', '.join(STAGES[1:])}, not {start!r}")
    ep = trace.evidence_package
    hyps = trace.hypotheses
    if start == "hypothesis_set":
        hyps = hypothesis_set(ep, graph=graph, symptom=trace.symptom, config=config)
    chains = trace.chains
    if start in ("hypothesis_set", "analysis_structure"):
        chains = analysis_structure(ep, hyps, graph=graph, symptom=trace.symptom)
    decision = decision_report(ep, hyps, chains, graph=graph, symptom=trace.symptom)
    return replace(trace, hypotheses=hyps, chains=chains, decision=decision)
