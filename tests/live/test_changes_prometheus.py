"""Integration: changes read from a real Prometheus holding series shaped as kube-state-metrics,
Argo CD and every Prometheus client export them: a new image, a replica count that moved, a new
revision and a restart, each at its time; series that hold still are no change."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bot.backfill import serving
from bot.changes import Changes
from bot.telemetry import ReplayTelemetry
from lab.processes import binaries
from rca.changes import Change, ChangeKind
from rca.errors import DataError
from rca.sources.prometheus_changes import PrometheusChanges
from rca.telemetry import Window
from storage.changes import ChangeStore

T0 = 1_796_371_200.0  # 2026-12-04T08:00:00Z
STEP = 15.0


def samples(name: str, labels: str, start: float, end: float, value: float) -> list[str]:
    out, t = [], start
    while t < end:
        out.append(f"{name}{{{labels}}} {value!r} {t:.3f}")
        t += STEP
    return out


def openmetrics() -> str:
    lines = ["# TYPE kube_pod_container_info gauge"]
    # orders rolls out 1.4.3 at T0 + 1800 (new pods, new series); payments holds its image
    lines += samples(
        "kube_pod_container_info", 'container="orders",pod="orders-a",image="shop/orders:1.4.2"', T0, T0 + 1860, 1
    )
    lines += samples(
        "kube_pod_container_info",
        'container="orders",pod="orders-b",image="shop/orders:1.4.3"',
        T0 + 1800,
        T0 + 3600,
        1,
    )
    lines += samples(
        "kube_pod_container_info", 'container="payments",pod="payments-a",image="shop/payments:2.0"', T0, T0 + 3600, 1
    )
    lines += ["# TYPE kube_deployment_spec_replicas gauge"]
    lines += samples("kube_deployment_spec_replicas", 'deployment="cart"', T0, T0 + 2400, 2)
    lines += samples("kube_deployment_spec_replicas", 'deployment="cart"', T0 + 2400, T0 + 3600, 5)
    lines += ["# TYPE argocd_app_info gauge"]
    lines += samples("argocd_app_info", 'name="search",revision="9f2c1e0b7a6d5c4b3a2f"', T0, T0 + 1200, 1)
    lines += samples("argocd_app_info", 'name="search",revision="0a1b2c3d4e5f60718293"', T0 + 1200, T0 + 3600, 1)
    lines += ["# TYPE process_start_time_seconds gauge"]
    lines += samples("process_start_time_seconds", 'service="ledger",pod="ledger-a"', T0, T0 + 3000, T0 - 86400)
    lines += samples("process_start_time_seconds", 'service="ledger",pod="ledger-a"', T0 + 3000, T0 + 3600, T0 + 2990)
    lines += samples("process_start_time_seconds", 'service="ledger",pod="ledger-b"', T0, T0 + 3600, T0 - 3600)
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> object:
    if binaries() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's prometheus package: scripts/ensure-prometheus.sh installs it")
        pytest.skip("prometheus is not installed here (scripts/ensure-prometheus.sh)")
    work = tmp_path_factory.mktemp("changes")
    (work / "changes.om").write_text(openmetrics())
    with serving(work / "changes.om", work) as url:
        yield url


def test_changes_are_read_from_the_series_that_record_them(prometheus: str) -> None:
    found = asyncio.run(PrometheusChanges(prometheus, step=STEP).changes(Window(T0 + 600, T0 + 3600)))
    got = {(c.service, c.kind, c.before, c.after): c.time for c in found}
    assert set(got) == {
        ("orders", ChangeKind.DEPLOY, "1.4.2", "1.4.3"),
        ("cart", ChangeKind.SCALE, "2", "5"),
        ("search", ChangeKind.DEPLOY, "9f2c1e0b7a6d", "0a1b2c3d4e5f"),
        ("ledger", ChangeKind.RESTART, "", ""),
    }
    assert got[("orders", ChangeKind.DEPLOY, "1.4.2", "1.4.3")] == pytest.approx(T0 + 1800, abs=STEP)
    assert got[("cart", ChangeKind.SCALE, "2", "5")] == pytest.approx(T0 + 2400, abs=STEP)
    assert got[("ledger", ChangeKind.RESTART, "", "")] == pytest.approx(T0 + 2990)  # the start time itself
    assert all(isinstance(c, Change) and c.source == "prometheus" for c in found)
    assert [c.time for c in found] == sorted(c.time for c in found)


def test_a_window_before_the_changes_holds_none_and_a_down_backend_says_so(prometheus: str, tmp_path: Path) -> None:
    assert asyncio.run(PrometheusChanges(prometheus, step=STEP).changes(Window(T0 - 7200, T0 - 3600))) == []
    with pytest.raises(DataError, match="prometheus"):
        asyncio.run(PrometheusChanges("http://127.0.0.1:9", timeout=2.0).changes(Window(T0, T0 + 600)))


def test_the_bot_lists_recorded_and_live_changes_together_and_says_what_it_could_not_read(
    prometheus: str, tmp_path: Path
) -> None:
    store = ChangeStore(tmp_path / "bot.db")
    store.add(Change("orders", ChangeKind.CONFIG, T0 + 1700, "pool=10", "pool=2", "ana", "", "marker"))
    telemetry = ReplayTelemetry(tmp_path, now=T0 + 3600)
    window = Window(T0 + 600, T0 + 3600)
    try:
        both = asyncio.run(
            Changes(store, telemetry, [PrometheusChanges(prometheus, step=STEP)]).listing_for(
                "orders", window, tz="UTC"
            )
        )
        assert "pool=10 → pool=2 (config by ana)" in both and "1.4.2 → 1.4.3 (deploy)" in both
        assert both.index("pool=2") < both.index("1.4.3")  # earliest first
        down = Changes(store, telemetry, [PrometheusChanges("http://127.0.0.1:9", timeout=2.0)])
        partial = asyncio.run(down.listing_for("orders", window, tz="UTC"))
        assert "pool=2" in partial and "1.4.3" not in partial and "Not read: the changes Prometheus records" in partial
    finally:
        store.close()
