"""The planted resource stress of bench/stress.py: where it lands and how large it is."""

from __future__ import annotations

import asyncio

import numpy as np

from bench.stress import Stressed, robust_scale
from rca.model import Series, Window
from rca.sources.memory import InMemoryMetrics
from rca.sources.protocols import MetricQuery

T = np.arange(0.0, 600.0, 60.0)


def _series(entity: str, metric: str, values: list[float]) -> Series:
    return Series(entity, metric, T, np.array(values, dtype=float))


def test_only_the_entitys_own_cpu_and_memory_rise_from_the_given_time_by_their_own_deviations() -> (
    None
):
    cpu = [1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 3.0]
    source = InMemoryMetrics([
        _series("cart", "container_cpu_usage_seconds_total", cpu),
        _series("cart", "jvm_memory_used_bytes", [5.0] * 10),
        _series("cart", "PodServerLatencyP90(s)", cpu),
        _series("cart", "node_cpu_seconds_total", cpu),  # the host's, not the service's
        _series("front", "container_cpu_usage_seconds_total", cpu),
    ])  # fmt: skip
    stressed = Stressed(source, "cart", since=300.0, shift=10.0)
    got = {
        (s.entity, s.metric): s.values
        for s in asyncio.run(stressed.series(MetricQuery(Window(0, 600))))
    }
    raised = got[("cart", "container_cpu_usage_seconds_total")]
    scale = robust_scale(np.array(cpu[:5]))
    assert scale > 0
    np.testing.assert_allclose(raised[:5], cpu[:5])
    np.testing.assert_allclose(raised[5:], np.array(cpu[5:]) + 10.0 * scale)
    flat = got[
        ("cart", "jvm_memory_used_bytes")
    ]  # no spread at all before: a unit step per deviation
    np.testing.assert_allclose(flat[5:], 5.0 + 10.0)
    for untouched in (("cart", "PodServerLatencyP90(s)"), ("cart", "node_cpu_seconds_total"),
                      ("front", "container_cpu_usage_seconds_total")):  # fmt: skip
        np.testing.assert_allclose(got[untouched], cpu)


def test_a_family_moves_its_own_series_the_bad_way() -> None:
    from bench.stress import FAMILIES

    noisy = [1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 3.0]
    source = InMemoryMetrics([
        _series("cart", "PodSuccessRate(%)", noisy),
        _series("cart", "error_count", noisy),
        _series("cart", "PodServerLatencyP90(s)", noisy),
    ])  # fmt: skip
    stressed = Stressed(source, "cart", since=300.0, shift=20.0, family=FAMILIES["errors"])
    got = {s.metric: s.values for s in asyncio.run(stressed.series(MetricQuery(Window(0, 600))))}
    scale = robust_scale(np.array(noisy[:5]))
    np.testing.assert_allclose(
        got["PodSuccessRate(%)"][5:], np.array(noisy[5:]) - 20.0 * scale
    )  # a fall is bad
    np.testing.assert_allclose(got["error_count"][5:], np.array(noisy[5:]) + 20.0 * scale)
    np.testing.assert_allclose(got["PodServerLatencyP90(s)"], noisy)  # another family: untouched
