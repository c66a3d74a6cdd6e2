"""Integration: an error ratio read through a real Prometheus is 0 % where requests were served
and none failed, not missing. A counter labelled by status code or outcome has no error series
until the first error, so a plain ratio of two sums returns nothing for a healthy service: its
normal would be unknown, and the first failures would be measured against themselves."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bot.backfill import serving
from lab.processes import binaries
from lab.record import mapping_file
from rca.sources.prometheus import PrometheusMetrics, load_mapping
from rca.sources.protocols import MetricQuery
from rca.telemetry import Window

T0 = 1_800_000_000.0
STEP = 15.0
POINTS = 80  # 20 minutes


def _counter(name: str, labels: str, per_step: float) -> list[str]:
    return [f"{name}{{{labels}}} {per_step * i!r} {T0 + STEP * i:.3f}" for i in range(POINTS)]


def _family(name: str, rows: list[list[str]]) -> list[str]:
    return [f"# TYPE {name} unknown", *(line for row in rows for line in row)]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if binaries() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's prometheus package: scripts/ensure-prometheus.sh installs it")
        pytest.skip("prometheus is not installed here (scripts/ensure-prometheus.sh)")
    lab_server, lab_client = (
        "lab_http_server_request_duration_seconds_count",
        "lab_http_client_request_duration_seconds_count",
    )
    otel = "http_server_request_duration_seconds_count"
    lines = [
        *_family(
            lab_server,
            [
                _counter(lab_server, 'service="calm",pod="calm-0",code="200"', 150.0),
                _counter(lab_server, 'service="failing",pod="failing-0",code="200"', 100.0),
                _counter(lab_server, 'service="failing",pod="failing-0",code="500"', 50.0),
            ],
        ),
        *_family(
            lab_client,
            [
                _counter(lab_client, 'service="calm",pod="calm-0",outcome="ok"', 60.0),
                _counter(lab_client, 'service="failing",pod="failing-0",outcome="ok"', 45.0),
                _counter(lab_client, 'service="failing",pod="failing-0",outcome="error"', 15.0),
            ],
        ),
        *_family(
            otel,
            [
                _counter(otel, 'service_name="calm",http_response_status_code="200"', 150.0),
                _counter(otel, 'service_name="failing",http_response_status_code="200"', 100.0),
                _counter(otel, 'service_name="failing",http_response_status_code="503"', 50.0),
            ],
        ),
        "# EOF",
    ]
    workdir = tmp_path_factory.mktemp("ratios")
    om = workdir / "counters.om"
    om.write_text("\n".join(lines) + "\n")
    with serving(om, workdir) as url:
        yield url


def _read(url: str, mapping: Path | None, metric: str) -> dict[str, np.ndarray]:
    source = PrometheusMetrics(url, load_mapping(mapping))
    window = Window(T0 + 300.0, T0 + STEP * (POINTS - 1))
    series = asyncio.run(source.series(MetricQuery(window, ("calm", "failing"), (metric,))))
    return {s.entity: s.values[np.isfinite(s.values)] for s in series}


@pytest.mark.parametrize(
    ("mapping", "metric", "failing"),
    [
        (mapping_file(), "ErrorRate(%)", 100 / 3),
        (mapping_file(), "ClientErrorRate(%)", 25.0),
        (None, "ErrorRate(%)", 100 / 3),  # the shipped defaults (OpenTelemetry's HTTP histograms)
    ],
)
def test_an_error_ratio_is_zero_where_nothing_failed(
    prometheus: str, mapping: Path | None, metric: str, failing: float
) -> None:
    read = _read(prometheus, mapping, metric)
    assert set(read) == {"calm", "failing"}  # the healthy service is read, not left out
    assert read["calm"].size > 10 and np.all(read["calm"] == 0.0)
    assert read["failing"].size > 10 and np.allclose(read["failing"], failing)
