import asyncio
import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from bot.cli import main
from rca.evidence import EvidenceId
from rca.evidence.toolbox import Toolbox
from rca.hypotheses import Hypothesis, HypothesisId
from rca.model import CaseId, Cost, FaultType, Incident, Modality, Normal, Sources
from rca.sources.memory import InMemoryMetrics, StaticTopology
from rca.star.verify import run_tests
from rca.telemetry import Series, Window
from rca.trace import DecisionReport, EvidencePackage, Trace, VerificationTest

T0 = 1_700_000_000.0


def _incident() -> Incident:
    rng = np.random.default_rng(1)
    t = T0 + 60 * np.arange(60, dtype=float)

    def cpu(jump: bool) -> np.ndarray:
        v = 10 + rng.normal(0, 0.5, 60)
        if jump:
            v[50:] += 40
        return v

    series = [Series("a", "cpu_usage", t, cpu(True)), Series("b", "cpu_usage", t, cpu(False))]
    graph = nx.DiGraph([("front", "a"), ("front", "b")])
    src = Sources(metrics=InMemoryMetrics(series), topology=StaticTopology(graph))
    window = Window(T0 + 45 * 60, T0 + 60 * 60)
    return Incident(
        CaseId("synthetic/verify"),
        "synthetic",
        "front",
        window,
        src,
        {Modality.METRICS: Normal(Window(T0, window.start), src)},
    )


def _trace(window: Window) -> Trace:
    h1 = Hypothesis(HypothesisId("h-1"), "b", FaultType.CPU, 0.6, (EvidenceId("ev-1"),), "wrongly leading")
    h2 = Hypothesis(HypothesisId("h-2"), "a", FaultType.CPU, 0.5, (EvidenceId("ev-2"),), "the real one")
    both = ((h1.id, "anomalous"), (h2.id, "normal"))
    tests = (
        VerificationTest("t-1", h1.id, "metrics", "b", "q", "cpu_usage", both, "b's CPU"),
        VerificationTest(
            "t-2", h2.id, "metrics", "a", "q", "cpu_usage", ((h1.id, "normal"), (h2.id, "anomalous")), "a's CPU"
        ),
    )
    ep = EvidencePackage(window, {"metrics": True, "logs": False, "traces": False}, ("a", "b"), (), (), {})
    report = DecisionReport((("b", "cpu", 0.5, "h-1"), ("a", "cpu", 0.4, "h-2")), 0.5, "b", tests)
    return Trace("synthetic/verify", "front", "lats", ep, (h1, h2), (), report, Cost())


def test_a_verification_test_separates_two_hypotheses() -> None:
    incident = _incident()
    run = asyncio.run(run_tests(_trace(incident.window), Toolbox(incident)))
    observed = {o.test.id: o.observed for o in run.outcomes}
    assert observed == {"t-1": "normal", "t-2": "anomalous"}
    assert [h.service for h in run.before] == ["b", "a"]
    assert [h.service for h in run.after] == ["a", "b"]  # re-ranked by the tests
    assert run.outcomes[0].verdict_for("h-1") == "contradicted"
    assert run.outcomes[1].verdict_for("h-2") == "confirmed"


def test_verify_command(tmp_path: Path, nezha_slice: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["investigate", "Frontend", "10m", "--data", str(nezha_slice), "--at", "2023-01-29T13:36:00Z", "--json"])
        == 0
    )
    path = tmp_path / "trace.json"
    path.write_text(capsys.readouterr().out)
    assert main(["verify", str(path), "--data", str(nezha_slice), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["tests"] and all(t["observed"] in ("anomalous", "normal", "no data") for t in run["tests"])
    assert run["ranking_after"][0]["service"] == "ts-contacts-service"
