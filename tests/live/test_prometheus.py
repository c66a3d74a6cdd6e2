"""Integration: a real Prometheus backfilled from a real TrainTicket case answers the same
investigation as the dataset adapter."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.backfill import backfilled
from bot.config import LiveConfig
from bot.telemetry import telemetry_from
from lab.processes import binaries
from rca.engines import build_engine
from rca.sources.datasets import find_cases
from rca.sources.prometheus import PrometheusMetrics, load_mapping
from rca.sources.protocols import MetricQuery
from rca.star.audit import audit
from rca.star.criteria import AuditContext
from rca.telemetry import Window
from rca.timestamps import parse_timestamp
from rca.trace_json import from_json

AT = parse_timestamp("2023-01-29T13:36:00Z")


@pytest.fixture(scope="module")
def prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Path]]:
    if binaries() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's prometheus package: scripts/ensure-prometheus.sh installs it")
        pytest.skip("prometheus is not installed here (scripts/ensure-prometheus.sh)")
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    with backfilled(case, tmp_path_factory.mktemp("prometheus")) as running:
        yield running


def top(service: str, window: str, **telemetry: object) -> str:
    async def go() -> str:
        t = telemetry_from(now=AT, **telemetry)  # type: ignore[arg-type]
        incident = await t.incident(service, await t.window(window))
        diagnosis = await build_engine("lats").investigate(incident)
        return diagnosis.ranking[0].service

    return asyncio.run(go())


def test_same_root_cause_through_prometheus(prometheus: tuple[str, Path], nezha_slice: Path) -> None:
    url, mapping = prometheus
    through_dataset = top("Frontend", "10m", data=nezha_slice, live=LiveConfig())
    live = LiveConfig(prometheus_url=url, prom_mapping=mapping)
    assert top("Frontend", "10m", data=nezha_slice, live=live) == through_dataset
    # metrics from Prometheus alone (no logs, traces or topology) still find it
    assert top("Frontend", "10m", data=None, live=live) == through_dataset


def test_discovery_and_hostile_names(prometheus: tuple[str, Path]) -> None:
    url, mapping = prometheus
    source = PrometheusMetrics(url, load_mapping(mapping))
    window = Window(AT - 600, AT)

    async def go() -> None:
        services = await source.entities()
        assert "Frontend" in services and "ts-contacts-service" in services
        one = await source.series(MetricQuery(window, ("ts-contacts-service",), ("CpuUsage(m)",)))
        assert one and {s.entity for s in one} == {"ts-contacts-service"}
        for hostile in ('x"} or vector(1) or up{a="', "ts-.*", "Frontend|ts-contacts-service", 'a\\"b\n'):
            assert await source.series(MetricQuery(window, (hostile,), ("CpuUsage(m)",))) == []
        two = await source.series(MetricQuery(window, ("ts-contacts-service", ".*"), ("CpuUsage(m)",)))
        assert {s.entity for s in two} == {"ts-contacts-service"}  # regex-quoted: ".*" matches nothing

    asyncio.run(go())


def test_a_down_backend_leaves_a_partial_result(nezha_slice: Path) -> None:
    async def go() -> None:
        dead = LiveConfig(prometheus_url="http://127.0.0.1:9", timeout=2)  # nothing listens there
        t = telemetry_from(data=nezha_slice, now=AT, live=dead)
        incident = await t.incident("Frontend", await t.window("10m"))
        diagnosis = await build_engine("lats").investigate(incident)
        assert any(m.startswith("metrics: unavailable") for m in diagnosis.missing)
        assert diagnosis.ranking  # logs and traces still rank
        trace = diagnosis.trace
        assert trace is not None and trace["evidence_package"]["modalities"]["metrics"] is False
        graph = await incident.sources.topology.topology()  # type: ignore[union-attr]
        verdict = audit(from_json(trace), AuditContext(graph, incident.sources.modalities()))
        (seen,) = [c for c in verdict.criteria if c.name == "sources_read"]
        assert seen.violated and "metrics could not be read" in seen.explanation  # the audit sees it

    asyncio.run(go())


def test_a_live_investigation_snapshotted_replays_offline(prometheus: tuple[str, Path], tmp_path: Path) -> None:
    from rca.sources.snapshot import load_snapshot, write_snapshot

    url, mapping = prometheus
    live = LiveConfig(prometheus_url=url, prom_mapping=mapping)

    async def go() -> tuple[str, str]:
        t = telemetry_from(data=None, now=AT, live=live)
        incident = await t.incident("Frontend", await t.window("10m"))
        out = await write_snapshot(incident, tmp_path / "snap", origin={"prometheus": url}, created=AT)
        a = await build_engine("lats").investigate(incident)
        b = await build_engine("lats").investigate(load_snapshot(out))
        return a.ranking[0].service, b.ranking[0].service

    live_top, replayed_top = asyncio.run(go())
    assert live_top == replayed_top == "ts-contacts-service"


def test_a_window_and_its_look_back_read_at_once_are_the_two_reads(prometheus: tuple[str, Path]) -> None:
    from rca.sources.prometheus import LookedBack

    url, mapping = prometheus
    source = PrometheusMetrics(url, load_mapping(mapping))
    window = Window(AT - 600, AT)
    lookback = Window(window.start - 3600, window.start)  # whole steps of the mapping's 60 s

    def by_key(series: list) -> dict:  # type: ignore[type-arg]
        return {(s.entity, s.metric, s.instance): (s.timestamps.tolist(), s.values.tolist()) for s in series}

    async def go() -> None:
        apart = [by_key(await source.series(MetricQuery(w))) for w in (window, lookback)]
        joined = LookedBack(source, window, lookback)
        together = [by_key(await joined.series(MetricQuery(w))) for w in (window, lookback)]
        assert apart[0] and apart[1]
        assert together == apart  # NaN-free here: the case's samples are all numbers
        wider = Window(lookback.start - 60, window.end)  # any other window is read as asked
        assert by_key(await joined.series(MetricQuery(wider))) == by_key(await source.series(MetricQuery(wider)))

    asyncio.run(go())
