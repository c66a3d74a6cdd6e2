"""Telemetry as another system would record it: each transform keeps what it must keep (the
signal a name means, a sample's value whatever the window, nothing before a crop) and changes
only what it says it changes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from rca.errors import InputError
from rca.evaluation.protocols import LATE_LENGTH, LATE_SECONDS, Placement, Protocol, parse_protocol
from rca.evaluation.transforms import Fleet, Resampled, crop, resample
from rca.evaluation.vocabulary import Renamed, Vocabulary, renamed
from rca.model import Modality
from rca.signals import bad_direction, is_client_side, signal_of
from rca.sources.datasets import find_cases
from rca.sources.memory import InMemoryMetrics
from rca.sources.protocols import LogQuery, MetricQuery
from rca.telemetry import Series, Window

NEZHA_NAMES = (
    "CpuUsage(m)",
    "CpuUsageRate(%)",
    "MemoryUsage(Mi)",
    "MemoryUsageRate(%)",
    "SyscallRead",
    "NetworkReceiveBytes",
    "PodClientLatencyP90(s)",
    "PodServerLatencyP99(s)",
    "PodWorkload(Ops)",
    "PodSuccessRate(%)",
    "NodeCpuUsageRate(%)",
    "latency",
    "error_rate",
    "availability",
    "memory_cache",
    "power",
    "something_unknown",
)


@pytest.mark.parametrize("vocabulary", list(Vocabulary))
def test_a_renamed_metric_means_the_same_signal_in_the_same_direction(
    vocabulary: Vocabulary,
) -> None:
    names = [renamed(n, vocabulary) for n in NEZHA_NAMES]
    assert len(set(names)) == len(names)  # two names never become one
    for old, new in zip(NEZHA_NAMES, names, strict=True):
        if old.startswith("Node"):
            continue  # a host series renamed to a workload's is another question
        assert signal_of(new) is signal_of(old), (old, new)
        assert bad_direction(new) == bad_direction(old), (old, new)
    assert renamed("PodServerLatencyP99(s)", vocabulary) == renamed("PodServerLatencyP99(s)", vocabulary)


def test_otel_names_keep_the_side_of_the_call_a_series_measures() -> None:
    """OpenTelemetry names the calls a service makes (`http.client.*`) apart from those it
    answers (`http.server.*`): renamed, a client-side series stays one."""
    for metric in ("ClientErrorRate(%)", "PodClientLatencyP99(s)"):
        assert renamed(metric, Vocabulary.OTEL).startswith("http.client.") and is_client_side(
            renamed(metric, Vocabulary.OTEL)
        )
    for metric in ("ErrorRate(%)", "PodServerLatencyP99(s)"):
        assert renamed(metric, Vocabulary.OTEL).startswith("http.server.") and not is_client_side(
            renamed(metric, Vocabulary.OTEL)
        )


def test_renamed_source_answers_queries_in_its_own_names() -> None:
    t = np.arange(10.0)
    src = Renamed(
        InMemoryMetrics([Series("a", "CpuUsage(m)", t, t), Series("a", "MemoryUsage(Mi)", t, t)]), Vocabulary.CADVISOR
    )
    everything = asyncio.run(src.series(MetricQuery(Window(0, 10))))
    assert {s.metric for s in everything} == {
        renamed("CpuUsage(m)", Vocabulary.CADVISOR),
        renamed("MemoryUsage(Mi)", Vocabulary.CADVISOR),
    }
    cpu = renamed("CpuUsage(m)", Vocabulary.CADVISOR)
    (one,) = asyncio.run(src.series(MetricQuery(Window(0, 10), metrics=(cpu,))))
    assert one.metric == cpu
    assert asyncio.run(src.series(MetricQuery(Window(0, 10), metrics=("CpuUsage(m)",)))) == []


def test_resampling_down_averages_and_up_holds() -> None:
    t = np.arange(0.0, 600.0, 60.0)
    v = np.arange(10.0)
    down = resample(Series("a", "m", t, v), 300.0)
    assert list(down.timestamps) == [0.0, 300.0, 600.0]
    assert list(down.values) == [0.0, np.mean(v[1:6]), np.mean(v[6:10])]
    up = resample(Series("a", "m", t, v), 5.0)
    assert up.timestamps[0] == 0.0 and np.all(np.diff(up.timestamps) == 5.0)
    at = {float(ts): float(x) for ts, x in zip(up.timestamps, up.values, strict=True)}
    assert at[60.0] == 1.0 and at[65.0] == 1.0 and at[115.0] == 1.0 and at[120.0] == 2.0


def test_a_resampled_sample_does_not_depend_on_the_window_asked() -> None:
    t = np.arange(0.0, 3600.0, 7.0)
    v = np.sin(t / 100.0)
    src = Resampled(InMemoryMetrics([Series("a", "cpu", t, v)]), 60.0)
    (whole,) = asyncio.run(src.series(MetricQuery(Window(0, 3600))))
    (part,) = asyncio.run(src.series(MetricQuery(Window(1200, 2400))))
    lookup = dict(zip(whole.timestamps, whole.values, strict=True))
    assert all(lookup[ts] == x for ts, x in zip(part.timestamps, part.values, strict=True))


def test_a_fleet_is_idle_noise_the_same_whichever_window_asks() -> None:
    t = np.arange(0.0, 3600.0, 60.0)
    real = InMemoryMetrics([Series("svc", "CpuUsage(m)", t, np.ones_like(t)), Series("svc", "latency", t, t)])
    fleet = Fleet(real, 20, "set/case-1")
    entities = asyncio.run(fleet.entities())
    assert len(entities) == 21 and "svc" in entities
    whole = asyncio.run(fleet.series(MetricQuery(Window(0, 3600))))
    assert len(whole) == 2 + 20 * 2
    idle = [s for s in whole if s.entity != "svc"]
    for s in idle:  # noise around its level: no series drifts
        assert abs(np.median(s.values[:30]) - np.median(s.values[30:])) < 0.1 * np.median(s.values)
    name = idle[0].entity
    (late,) = [s for s in asyncio.run(fleet.series(MetricQuery(Window(1800, 3600), (name,)))) if s.metric == "latency"]
    (early,) = [s for s in idle if s.entity == name and s.metric == "latency"]
    assert np.array_equal(late.values, early.values[30:])
    other = Fleet(real, 20, "set/case-2")
    (again,) = [s for s in asyncio.run(other.series(MetricQuery(Window(0, 3600), (name,)))) if s.metric == "latency"]
    assert not np.array_equal(again.values, early.values)  # another case, another fleet


def test_cropped_recordings_hold_nothing_before_the_fault(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    assert case.label.start is not None
    placed = asyncio.run(Protocol(Placement.CROPPED).place(case))
    realistic = asyncio.run(Protocol().place(case))
    assert placed.window == realistic.window
    metrics = placed.sources.metrics
    assert metrics is not None and placed.sources.logs is not None
    series = asyncio.run(metrics.series(MetricQuery(placed.window)))
    assert series and all(s.timestamps[0] >= case.label.start for s in series if len(s))
    logs = asyncio.run(placed.sources.logs.records(LogQuery(placed.window)))
    assert all(r.time >= case.label.start for r in logs)
    normal = placed.normal_for(Modality.METRICS)
    assert normal is not None and normal.sources.metrics is not None
    assert asyncio.run(normal.sources.metrics.series(MetricQuery(normal.window))) == []  # no look-back
    direct = crop(case.incident, case.label.start)
    assert direct.sources.topology is case.incident.sources.topology


def test_late_windows_begin_minutes_into_the_fault(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    assert case.label.start is not None
    placed = asyncio.run(Protocol(Placement.LATE).place(case))
    assert LATE_SECONDS[0] <= placed.window.start - case.label.start <= LATE_SECONDS[1]
    assert placed.window.seconds >= LATE_LENGTH and placed.alert_time is None
    assert asyncio.run(Protocol(Placement.LATE).place(case)).window == placed.window


def test_protocol_names_and_bad_input() -> None:
    p = parse_protocol("cropped", "logs", resample="5s", vocabulary="otel", fleet=200)
    assert p.name == "cropped, resampled 5s, otel names, fleet 200, logs hidden"
    with pytest.raises(InputError, match="vocabulary"):
        parse_protocol("realistic", vocabulary="prom")
    with pytest.raises(InputError, match="step"):
        parse_protocol("realistic", resample="fast")
    with pytest.raises(InputError, match="positive"):
        parse_protocol("realistic", resample="0s")
    with pytest.raises(InputError, match="fleet"):
        parse_protocol("realistic", fleet=-1)


def test_a_drifted_normal_moves_only_the_normal_resource_levels_and_by_at_most_the_share(nezha_slice: Path) -> None:
    async def scenario() -> None:
        case = find_cases(nezha_slice)[0]
        plain = await Protocol().place(case)
        moved = await Protocol(drift=0.3).place(case)
        again = await Protocol(drift=0.3).place(case)
        assert "another run" in moved.notes[-1]
        query = MetricQuery(plain.window)
        window_moved = await moved.sources.metrics.series(query)
        window_plain = await plain.sources.metrics.series(query)
        assert len(window_moved) == len(window_plain)
        assert all(
            np.array_equal(a.values, b.values, equal_nan=True) for a, b in zip(window_moved, window_plain, strict=True)
        )  # the window as recorded
        normal, drifted = plain.normal[Modality.METRICS], moved.normal[Modality.METRICS]
        before = await normal.sources.metrics.series(MetricQuery(normal.window))
        after = await drifted.sources.metrics.series(MetricQuery(drifted.window))
        twice = await again.normal[Modality.METRICS].sources.metrics.series(MetricQuery(drifted.window))
        assert all(
            np.array_equal(a.values, b.values, equal_nan=True) for a, b in zip(after, twice, strict=True)
        )  # drawn from the case id
        factors = set()
        for b, a in zip(before, after, strict=True):
            ok = np.isfinite(b.values) & (b.values != 0)
            if not ok.any():
                continue
            ratio = a.values[ok] / b.values[ok]
            assert np.allclose(ratio, ratio[0])  # one level per series
            if signal_of(b.metric).value in ("cpu", "memory", "disk", "network"):
                assert 0.7 - 1e-9 <= ratio[0] <= 1.3 + 1e-9
                factors.add(round(float(ratio[0]), 6))
            else:
                assert ratio[0] == pytest.approx(1.0)  # latency, errors, traffic do not drift
        assert len(factors) > 3  # each series its own level

    asyncio.run(scenario())
    assert parse_protocol("realistic", drift="20%").drift == pytest.approx(0.2)
    assert parse_protocol("realistic", drift="0.2").name == "realistic, normal drifted 20%"
    for bad in ("1", "-0.1", "lots"):
        with pytest.raises(InputError, match="drift"):
            parse_protocol("realistic", drift=bad)
