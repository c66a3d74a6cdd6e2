"""The four-stage trace as JSON: written and read back through its versioned JSON Schema
(`rca/schemas/trace.schema.json`), so a stored investigation, a replay and a model's patch
all meet the same checks."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import jsonschema

from rca.changes import Change
from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.evidence.traces import GapShare
from rca.hypotheses import Hypothesis, HypothesisId
from rca.model import Cost, FaultType, Modality
from rca.signals import Signal
from rca.telemetry import Window, to_iso
from rca.timestamps import parse_timestamp
from rca.trace import VERSION, Chain, DecisionReport, EvidencePackage, Link, Trace, VerificationTest


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
    """The trace as JSON. Built from typed values, it is not validated here (the tests hold
    the engines' traces to the schema); every trace read back is (from_json)."""
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
            **({"changes": [c.to_json() for c in ep.changes]} if ep.changes else {}),
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
        tuple(Change.from_json(c) for c in ep.get("changes", ())),
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
