import asyncio

import numpy as np

from rca.engines.baro import BaroEngine, robust_score
from rca.model import CaseId, FaultType, Incident, Modality, Normal, Sources
from rca.sources.memory import InMemoryMetrics
from rca.telemetry import Series, Window

T0 = 1_700_000_000.0


def _series(entity: str, metric: str, values: list[float]) -> Series:
    return Series(entity, metric, T0 + 60 * np.arange(len(values), dtype=float), np.array(values))


def test_robust_score_is_the_largest_deviation_in_iqrs() -> None:
    normal = np.array([1.0, 2.0, 3.0, 4.0, 5.0])  # median 3, IQR 2
    assert robust_score(normal, np.array([3.0, 9.0, 1.0])) == 3.0
    assert robust_score(np.array([2.0, 2.0, 2.0]), np.array([5.0])) == 3.0  # zero IQR scales by 1
    assert robust_score(np.array([np.nan]), np.array([5.0])) == 0.0


def test_baro_ranks_the_service_whose_cpu_jumps() -> None:
    rng = np.random.default_rng(0)
    quiet = lambda: list(50 + rng.normal(0, 1, 60))  # noqa: E731
    series = [
        _series("frontend", "latency_p99", quiet()[:50] + [80.0] * 10),
        _series("cart", "cpu_usage", quiet()[:50] + [95.0] * 10),
        _series("catalog", "cpu_usage", quiet()),
        _series("payment", "memory_usage", quiet()),
    ]
    src = Sources(metrics=InMemoryMetrics(series))
    incident = Incident(
        id=CaseId("synthetic/1"),
        dataset="synthetic",
        symptom="frontend",
        window=Window(T0 + 50 * 60, T0 + 60 * 60),
        sources=src,
        normal={Modality.METRICS: Normal(Window(T0, T0 + 50 * 60), src)},
    )
    diagnosis = asyncio.run(BaroEngine().investigate(incident))
    assert diagnosis.ranking[0].service == "cart"
    assert diagnosis.ranking[0].fault_type is FaultType.CPU
    assert {c.service for c in diagnosis.ranking} == {"frontend", "cart", "catalog", "payment"}
    assert "logs: absent" in diagnosis.missing
