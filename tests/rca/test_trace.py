"""The analysis stage states only the causal links its telemetry supports."""

import jsonschema
import networkx as nx

from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.hypotheses import Hypothesis, HypothesisId
from rca.model import FaultType, Modality, Window
from rca.signals import Signal
from rca.trace import EvidencePackage, analysis_structure, schema


def _ev(i: int, entity: str, onset: float | None) -> Evidence:
    return Evidence(EvidenceId(f"ev-{i}"), Modality.METRICS, EvidenceKind.METRIC_SHIFT, entity, "cpu", 9.0,
                    Signal.CPU, "q", "d", onset)  # fmt: skip


def _chain(evidence: list[Evidence]) -> list[tuple[str, str]]:
    graph = nx.DiGraph([("front", "api"), ("api", "db")])  # caller -> callee
    ep = EvidencePackage(Window(0, 600), {"metrics": True}, ("front", "api", "db"), tuple(evidence), (), {})
    h = Hypothesis(HypothesisId("h-1"), "db", FaultType.CPU, 0.9, (EvidenceId("ev-1"),), "")
    (chain,) = analysis_structure(ep, (h,), graph=graph, symptom="front")
    return [(ln.source, ln.target) for ln in chain.links]


def test_every_supported_step_in_order_is_a_link() -> None:
    assert _chain([_ev(1, "db", 100), _ev(2, "api", 150), _ev(3, "front", 160)]) == [("db", "api"), ("api", "front")]


def test_a_callee_without_evidence_is_no_cause() -> None:
    assert _chain([_ev(1, "db", 100), _ev(3, "front", 160)]) == [("db", "api")]


def test_a_cause_that_starts_after_its_effect_is_no_link() -> None:
    assert _chain([_ev(1, "db", 400), _ev(2, "api", 100), _ev(3, "front", 160)]) == [("api", "front")]
    assert _chain([_ev(1, "db", 130), _ev(2, "api", 100)]) == [("db", "api"), ("api", "front")]  # within a minute


def test_the_bundled_trace_schema_is_itself_valid() -> None:
    """Traces are validated against a compiled schema that is not re-checked at run time."""
    doc = schema()
    jsonschema.validators.validator_for(doc).check_schema(doc)
