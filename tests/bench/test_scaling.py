"""bench.scaling's live mode: a real Prometheus backfilled with a generated system answers the
bot's live investigation in one query per mapped metric, and the culprit comes first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.scaling import live_runs
from lab.processes import binaries
from rca.sources.prometheus import load_mapping


def test_a_live_investigation_asks_prometheus_once_per_metric(tmp_path: Path) -> None:
    if binaries() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's prometheus package: scripts/ensure-prometheus.sh installs it")
        pytest.skip("prometheus is not installed here (scripts/ensure-prometheus.sh)")
    runs = live_runs(40, 3, 1, tmp_path)
    mapped = len(load_mapping().metrics)
    # service discovery, then the window and its look-back in one range query per metric
    assert runs.queries == 1 + mapped, runs
    assert runs.culprit_first == 1, runs
    assert not any(m.startswith("metrics") for m in runs.missing), runs.missing
