"""The four-stage trace of an investigation, versioned and checked against its JSON Schema.

    evidence package   -> window, modalities, entity scope, evidence items (with queries)
    hypothesis set     -> (service, fault type, value) hypotheses citing evidence ids
    analysis structure -> causal chains in the call graph, with onsets and supporting evidence
    decision report    -> ranking, confidence, recommended verification tests

Each later stage is a function of the earlier ones, so any stage can be replayed from given
upstream artifacts (`replay`).
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import jsonschema
import networkx as nx

from rca.decision import decide
from rca.evidence import Evidence, EvidenceId, EvidenceKind, earliest_onsets
from rca.evidence.traces import NO_GAPS, GapShare
from rca.hypotheses import Hypothesis, HypothesisId, ScoringConfig, score_hypotheses
from rca.model import Cost, FaultType, Modality, Window, to_iso
from rca.signals import Signal
from rca.timestamps import parse_timestamp
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


# -- JSON -----------------------------------------------------------------------------------
def schema() -> dict[str, Any]:
    return json.loads((resources.files("rca") / "schemas" / "trace.schema.json").read_text())


@functools.cache
def _validator() -> Any:
    """The schema compiled once (that it is itself a valid schema is a test's concern:
    checking it costs more than validating a trace)."""
    doc = schema()
    return jsonschema.validators.validator_for(doc)(doc)


def _validate(doc: dict[str, Any]) -> None:
    """Raise the schema's most telling error for a document that does not conform."""
    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is not None:
        raise error


def to_json(trace: Trace) -> dict[str, Any]:
    """The trace as JSON, validated against the schema."""
    ep = trace.evidence_package
    doc = {
        "version": VERSION,
        "incident": {"id": trace.incident, "symptom": trace.symptom, "engine": trace.engine},
        "evidence_package": {
            "window": {"start": to_iso(ep.window.start), "end": to_iso(ep.window.end)},
            "alert_time": None if ep.alert_time is None else to_iso(ep.alert_time),
            "modalities": dict(ep.modalities),
            "entity_scope": list(ep.scope),
            "evidence": [ev.to_json() for ev in ep.evidence],
            "missing": list(ep.missing),
            "edge_shares": {
                k: {"in": round(v.incoming, 4), "out": round(v.outgoing, 4), "timed": sorted(v.timed)}
                for k, v in sorted(ep.edge_shares.items())
            },
        },
        "hypothesis_set": {"hypotheses": [h.to_json() for h in trace.hypotheses]},
        "analysis_structure": {
            "chains": [
                {
                    "hypothesis": c.hypothesis,
                    "root": c.root,
                    "links": [
                        {
                            "id": ln.id,
                            "source": ln.source,
                            "target": ln.target,
                            "onset_source": ln.onset_source,
                            "onset_target": ln.onset_target,
                            "evidence": list(ln.evidence),
                        }
                        for ln in c.links
                    ],
                }
                for c in trace.chains
            ]
        },
        "decision_report": {
            "ranking": [
                {"service": s, "fault_type": f, "confidence": c, "hypothesis": h}
                for s, f, c, h in trace.decision.ranking
            ],
            "confidence": trace.decision.confidence,
            "summary": trace.decision.summary,
            "tests": [
                {
                    "id": t.id,
                    "hypothesis": t.hypothesis,
                    "tool": t.tool,
                    "target": t.target,
                    "query": t.query,
                    "subject": t.subject,
                    "expected": dict(t.expected),
                    "rationale": t.rationale,
                }
                for t in trace.decision.tests
            ],
        },
        "cost": {
            "seconds": round(trace.cost.seconds, 4),
            "iterations": trace.cost.iterations,
            "hypotheses": trace.cost.hypotheses,
            "evidence_items": trace.cost.evidence_items,
            "llm_calls": trace.cost.llm_calls,
            "llm_input_tokens": trace.cost.llm_input_tokens,
            "llm_output_tokens": trace.cost.llm_output_tokens,
            "llm_cached_tokens": trace.cost.llm_cached_tokens,
            "reads": trace.cost.reads,
            "llm_phases": {phase: {"calls": calls, "tokens": tokens} for phase, calls, tokens in trace.cost.llm_phases},
        },
    }
    _validate(doc)
    return doc


def from_json(doc: dict[str, Any]) -> Trace:
    """A trace from its JSON, validated first."""
    _validate(doc)
    ep = doc["evidence_package"]
    evidence = tuple(
        Evidence(
            id=EvidenceId(e["id"]),
            modality=Modality(e["modality"]),
            kind=EvidenceKind(e["kind"]),
            entity=e["entity"],
            subject=e["subject"],
            score=float(e["score"]),
            signal=Signal(e["signal"]),
            query=e["query"],
            detail=e["detail"],
            onset=e["onset"],
            direction=int(e["direction"]),
            profile=tuple((float(t), float(z)) for t, z in e["profile"]),
            until=e.get("until"),
            under_way=bool(e.get("under_way", False)),
            peers=tuple(e.get("peers", ())),
        )
        for e in ep["evidence"]
    )
    package = EvidencePackage(
        Window(parse_timestamp(ep["window"]["start"]), parse_timestamp(ep["window"]["end"])),
        dict(ep["modalities"]),
        tuple(ep["entity_scope"]),
        evidence,
        tuple(ep["missing"]),
        {
            k: GapShare(float(v["in"]), float(v["out"]), frozenset(v.get("timed", ())))
            for k, v in ep["edge_shares"].items()
        },
        parse_timestamp(ep["alert_time"]) if ep.get("alert_time") else None,
    )
    hyps = tuple(
        Hypothesis(
            HypothesisId(h["id"]),
            h["service"],
            FaultType(h["fault_type"]),
            float(h["value"]),
            tuple(EvidenceId(i) for i in h["evidence"]),
            h["rationale"],
        )
        for h in doc["hypothesis_set"]["hypotheses"]
    )
    chains = tuple(
        Chain(
            HypothesisId(c["hypothesis"]),
            c["root"],
            tuple(
                Link(
                    ln["id"],
                    ln["source"],
                    ln["target"],
                    ln["onset_source"],
                    ln["onset_target"],
                    tuple(EvidenceId(i) for i in ln["evidence"]),
                )
                for ln in c["links"]
            ),
        )
        for c in doc["analysis_structure"]["chains"]
    )
    dr = doc["decision_report"]
    decision = DecisionReport(
        tuple((r["service"], r["fault_type"], float(r["confidence"]), r["hypothesis"]) for r in dr["ranking"]),
        float(dr["confidence"]),
        dr["summary"],
        tuple(
            VerificationTest(
                t["id"],
                HypothesisId(t["hypothesis"]),
                t["tool"],
                t["target"],
                t["query"],
                t["subject"],
                tuple((HypothesisId(k), v) for k, v in t["expected"].items()),
                t["rationale"],
            )
            for t in dr["tests"]
        ),
    )
    inc = doc["incident"]
    return Trace(inc["id"], inc["symptom"], inc["engine"], package, hyps, chains, decision, cost_from_json(doc["cost"]))


def cost_from_json(c: dict[str, Any]) -> Cost:
    """A trace's cost section (`reads` and `llm_phases` are absent from traces written before
    they were counted)."""
    phases = tuple((str(k), int(v["calls"]), int(v["tokens"])) for k, v in c.get("llm_phases", {}).items())
    return Cost(
        c["seconds"],
        c["iterations"],
        c["hypotheses"],
        c["evidence_items"],
        c["llm_calls"],
        c["llm_input_tokens"],
        c["llm_output_tokens"],
        c["llm_cached_tokens"],
        c.get("reads", 0),
        phases,
    )
