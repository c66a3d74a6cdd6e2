"""Metric names in another exporter's vocabulary (cAdvisor, OpenTelemetry, short hand-made
names), one name for one name, each meaning the same signal in the same direction: what
`--vocabulary` reads the telemetry as."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from enum import StrEnum

from rca.errors import InputError
from rca.signals import Signal, bad_direction, is_client_side, signal_of, words
from rca.sources.protocols import MetricQuery, MetricSource
from rca.telemetry import Series


class Vocabulary(StrEnum):
    CADVISOR = "cadvisor"
    OTEL = "otel"
    SHORT = "short"


# per vocabulary, the name of each signal (and of an error signal that is good when high)
_NAMES: dict[Vocabulary, dict[str, str]] = {
    Vocabulary.CADVISOR: {
        "cpu": "container_cpu_usage_seconds_total",
        "memory": "container_memory_working_set_bytes",
        "disk": "container_fs_writes_bytes_total",
        "network": "container_network_transmit_bytes_total",
        "packet_loss": "container_network_receive_packets_dropped_total",
        "latency": "istio_request_duration_milliseconds",
        "errors": "istio_requests_failed_total",
        "errors_good": "istio_requests_success_ratio",
        "traffic": "istio_requests_total",
        "other": "container_spec_shares",
    },
    Vocabulary.OTEL: {
        "cpu": "process.cpu.utilization",
        "memory": "process.memory.usage",
        "disk": "process.disk.operations",
        "network": "k8s.pod.network.io",
        "packet_loss": "k8s.pod.network.dropped",
        "latency": "http.server.request.duration",
        "errors": "http.server.request.errors",
        "errors_good": "http.server.request.success.ratio",
        "traffic": "http.server.active_requests",
        "other": "process.threads",
    },
    Vocabulary.SHORT: {
        "cpu": "cpu",
        "memory": "mem",
        "disk": "disk",
        "network": "net",
        "packet_loss": "drops",
        "latency": "lat",
        "errors": "err",
        "errors_good": "success",
        "traffic": "qps",
        "other": "misc",
    },
}


def renamed(metric: str, vocabulary: Vocabulary) -> str:
    """`metric` in another vocabulary: the name of its signal there (good-when-high error
    series keep that direction), its percentile word if it has one, and four hex digits of the
    old name so that two names never become one."""
    signal = signal_of(metric)
    key = "errors_good" if signal is Signal.ERRORS and bad_direction(metric) < 0 else signal.value
    base = _NAMES[vocabulary][key]
    if vocabulary is Vocabulary.OTEL and is_client_side(metric):  # the conventions name the calls made apart
        base = base.replace("http.server.", "http.client.")
    sep = "." if vocabulary is Vocabulary.OTEL else "_"
    pct = [w for w in words(metric) if w.startswith("p") and w[1:].isdigit()]
    tag = hashlib.sha256(metric.encode()).hexdigest()[:4]
    return sep.join([base, *pct[:1], tag])


@dataclass(frozen=True, slots=True)
class Renamed:
    inner: MetricSource
    vocabulary: Vocabulary

    async def entities(self) -> tuple[str, ...]:
        return await self.inner.entities()

    async def series(self, query: MetricQuery) -> list[Series]:
        if query.metrics:  # names asked in this vocabulary: asked of the inner source in its own
            known = {
                renamed(s.metric, self.vocabulary): s.metric
                for s in await self.inner.series(replace(query, metrics=()))
            }
            query = replace(query, metrics=tuple(known[m] for m in query.metrics if m in known))
            if not query.metrics:
                return []
        return [replace(s, metric=renamed(s.metric, self.vocabulary)) for s in await self.inner.series(query)]


def parse_vocabulary(text: str) -> Vocabulary:
    try:
        return Vocabulary(text.strip().lower())
    except ValueError:
        raise InputError(f"unknown vocabulary {text!r}; choose from {', '.join(v.value for v in Vocabulary)}") from None
