"""The planted resource stress of bench/stress.py: where it lands and how large it is."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from bench.stress import Stressed, robust_scale
from rca.sources.memory import InMemoryMetrics
from rca.sources.protocols import MetricQuery
from rca.telemetry import Series, Window

T = np.arange(0.0, 600.0, 60.0)


def _series(entity: str, metric: str, values: list[float]) -> Series:
    return Series(entity, metric, T, np.array(values, dtype=float))


def test_only_the_entitys_own_cpu_and_memory_rise_from_the_given_time_by_their_own_deviations() -> None:
    cpu = [1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 3.0]
    source = InMemoryMetrics(
        [
            _series("cart", "container_cpu_usage_seconds_total", cpu),
            _series("cart", "jvm_memory_used_bytes", [5.0] * 10),
            _series("cart", "PodServerLatencyP90(s)", cpu),
            _series("cart", "node_cpu_seconds_total", cpu),  # the host's, not the service's
            _series("front", "container_cpu_usage_seconds_total", cpu),
        ]
    )
    stressed = Stressed(source, "cart", since=300.0, shift=10.0)
    got = {(s.entity, s.metric): s.values for s in asyncio.run(stressed.series(MetricQuery(Window(0, 600))))}
    raised = got[("cart", "container_cpu_usage_seconds_total")]
    scale = robust_scale(np.array(cpu[:5]))
    assert scale > 0
    np.testing.assert_allclose(raised[:5], cpu[:5])
    np.testing.assert_allclose(raised[5:], np.array(cpu[5:]) + 10.0 * scale)
    flat = got[("cart", "jvm_memory_used_bytes")]  # no spread at all before: a unit step per deviation
    np.testing.assert_allclose(flat[5:], 5.0 + 10.0)
    for untouched in (
        ("cart", "PodServerLatencyP90(s)"),
        ("cart", "node_cpu_seconds_total"),
        ("front", "container_cpu_usage_seconds_total"),
    ):
        np.testing.assert_allclose(got[untouched], cpu)


def test_a_family_moves_its_own_series_the_bad_way() -> None:
    from bench.stress import FAMILIES

    noisy = [1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 3.0]
    source = InMemoryMetrics(
        [
            _series("cart", "PodSuccessRate(%)", noisy),
            _series("cart", "error_count", noisy),
            _series("cart", "PodServerLatencyP90(s)", noisy),
        ]
    )
    stressed = Stressed(source, "cart", since=300.0, shift=20.0, family=FAMILIES["errors"])
    got = {s.metric: s.values for s in asyncio.run(stressed.series(MetricQuery(Window(0, 600))))}
    scale = robust_scale(np.array(noisy[:5]))
    np.testing.assert_allclose(got["PodSuccessRate(%)"][5:], np.array(noisy[5:]) - 20.0 * scale)  # a fall is bad
    np.testing.assert_allclose(got["error_count"][5:], np.array(noisy[5:]) + 20.0 * scale)
    np.testing.assert_allclose(got["PodServerLatencyP90(s)"], noisy)  # another family: untouched


def test_a_plant_measures_d_and_its_rival_is_the_other_entity_that_moved_most_the_bad_way() -> None:
    from bench.stress import FAMILIES, deviation, rival
    from rca.model import CaseId, Incident, Sources

    noisy = [1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 3.0]
    scale = robust_scale(np.array(noisy[:5]))
    jump = noisy[:5] + [v + 4.0 * scale for v in noisy[5:]]
    source = InMemoryMetrics(
        [
            _series("cart", "container_cpu_usage_seconds_total", noisy),
            _series("front", "container_cpu_usage_seconds_total", jump),  # moved 4 deviations and more
            _series(
                "db",
                "container_cpu_usage_seconds_total",
                [v - 50.0 * scale if i >= 5 else v for i, v in enumerate(noisy)],
            ),  # less CPU: no fault
            _series("queue", "PodServerLatencyP90(s)", noisy[:5] + [100.0] * 5),  # another family
        ]
    )
    stressed = Stressed(source, "cart", since=300.0, shift=20.0)
    raised = asyncio.run(stressed.series(MetricQuery(Window(0, 600))))[0]
    # the plant, measured as a rival is, is D plus what the series did on its own
    own = deviation(_series("cart", "container_cpu_usage_seconds_total", noisy), 300.0)
    assert deviation(raised, 300.0) == pytest.approx(own + 20.0)
    incident = Incident(CaseId("c"), "set", "front", Window(0, 600), Sources(metrics=source))
    name, moved = asyncio.run(rival(incident, "cart", 300.0, FAMILIES["resource"]))
    assert name == "front"
    assert moved == deviation(_series("front", "container_cpu_usage_seconds_total", jump), 300.0)
    assert 4.0 <= moved < 20.0


def test_a_recording_that_begins_at_the_plant_is_measured_against_the_normal_an_engine_reads() -> None:
    from bench.stress import deviation, reference

    quiet = [10.0, 11.0, 10.0, 12.0, 11.0]  # recorded apart, before
    hot = _series("cart", "container_cpu_usage_seconds_total", [50.0] * 10)  # the fault from the first sample
    normals = {("cart", "container_cpu_usage_seconds_total", ""): np.array(quiet)}
    np.testing.assert_allclose(reference(hot, 0.0, normals), quiet)
    assert deviation(hot, 0.0, normals) == pytest.approx((50.0 - 11.0) / robust_scale(np.array(quiet)))
    assert deviation(hot, 0.0) == 0.0  # against its own values it never moved
    raised = asyncio.run(
        Stressed(InMemoryMetrics([hot]), "cart", since=0.0, shift=5.0, normals=normals).series(
            MetricQuery(Window(0, 600))
        )
    )[0]
    np.testing.assert_allclose(raised.values, 50.0 + 5.0 * robust_scale(np.array(quiet)))
