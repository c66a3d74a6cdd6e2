"""Metric names read in the words of the common exporters; a name not known is still an anomaly."""

from __future__ import annotations

import pytest

from rca.signals import Signal, bad_direction, is_host_metric, signal_of

CASES = [
    # cAdvisor
    ("container_cpu_usage_seconds_total", Signal.CPU),
    ("container_cpu_cfs_throttled_seconds_total", Signal.CPU),
    ("container_memory_working_set_bytes", Signal.MEMORY),
    ("container_memory_rss", Signal.MEMORY),
    ("container_fs_writes_bytes_total", Signal.DISK),
    ("container_network_receive_bytes_total", Signal.NETWORK),
    ("container_network_transmit_packets_dropped_total", Signal.PACKET_LOSS),
    # node-exporter
    ("node_load1", Signal.CPU),
    ("node_memory_MemAvailable_bytes", Signal.MEMORY),
    ("node_disk_io_time_seconds_total", Signal.DISK),
    ("node_netstat_Tcp_RetransSegs", Signal.PACKET_LOSS),
    # kube-state-metrics
    ("kube_pod_container_status_restarts_total", Signal.ERRORS),
    # OpenTelemetry semantic conventions
    ("http.server.request.duration", Signal.LATENCY),
    ("rpc.client.duration", Signal.LATENCY),
    ("process.cpu.utilization", Signal.CPU),
    ("jvm.memory.used", Signal.MEMORY),
    ("http.server.active_requests", Signal.TRAFFIC),
    # Micrometer
    ("http_server_requests_seconds_count", Signal.TRAFFIC),
    ("http_server_requests_seconds_sum", Signal.LATENCY),
    ("jvm_gc_pause_seconds", Signal.MEMORY),
    ("hikaricp_connections_active", Signal.TRAFFIC),
    # short forms
    ("cpu", Signal.CPU),
    ("mem", Signal.MEMORY),
    ("rss", Signal.MEMORY),
    ("heap", Signal.MEMORY),
    ("gc", Signal.MEMORY),
    ("lat_50", Signal.LATENCY),
    ("lat_p99", Signal.LATENCY),
    ("latency-90", Signal.LATENCY),
    ("load", Signal.CPU),
    ("power", Signal.CPU),
    ("qps", Signal.TRAFFIC),
    ("5xx", Signal.ERRORS),
    ("errors", Signal.ERRORS),
    ("io", Signal.DISK),
    ("disk", Signal.DISK),
    # the development datasets' own names
    ("CpuUsageRate(%)", Signal.CPU),
    ("MemoryUsage(Mi)", Signal.MEMORY),
    ("PodClientLatencyP90(s)", Signal.LATENCY),
    ("PodSuccessRate(%)", Signal.ERRORS),
    ("PodWorkload(Ops)", Signal.TRAFFIC),
    ("NetworkReceiveBytes", Signal.NETWORK),
    ("latency.p99", Signal.LATENCY),
    ("availability.Average", Signal.ERRORS),
    ("requests.Sum", Signal.TRAFFIC),
]


@pytest.mark.parametrize(("name", "signal"), CASES)
def test_each_vocabulary_names_what_it_measures(name: str, signal: Signal) -> None:
    assert signal_of(name) is signal


def test_the_good_direction_of_availability_free_memory_and_idle_cpu_is_up() -> None:
    for name in (
        "availability.Average",
        "PodSuccessRate(%)",
        "node_memory_MemAvailable_bytes",
        "cpu_idle",
        "cache_hit_ratio",
        "kube_pod_status_ready",
    ):
        assert bad_direction(name) == -1, name
    for name in ("mem", "lat_99", "errors", "CpuUsageRate(%)"):
        assert bad_direction(name) == 1, name


def test_host_series_are_told_from_the_workloads() -> None:
    assert (
        is_host_metric("NodeCpuUsageRate(%)")
        and is_host_metric("node_load1")
        and is_host_metric("system.cpu.utilization")
    )
    assert not is_host_metric("process.cpu.utilization") and not is_host_metric("cpu")


def test_a_name_it_does_not_know_is_still_scored_as_an_anomaly_of_its_entity() -> None:
    """A series of a kind not known moves its entity's generic component, either way."""
    import networkx as nx

    from rca.evidence import Evidence, EvidenceId, EvidenceKind
    from rca.hypotheses import score_hypotheses
    from rca.model import FaultType, Modality
    from rca.telemetry import Window

    assert signal_of("frobnication_index") is Signal.OTHER
    graph = nx.DiGraph([("front", "a"), ("front", "b")] + [("front", f"q{k}") for k in range(6)])
    evidence = [
        Evidence(
            EvidenceId("ev-1"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            "a",
            "frobnication_index",
            40.0,
            Signal.OTHER,
            "q",
            "d",
            600.0,
            -1,
        )
    ]
    (top, *_) = score_hypotheses(evidence, graph=graph, window=Window(0.0, 1000.0), symptom="front")
    assert top.service == "a" and top.fault_type is FaultType.UNKNOWN and top.value > 0
