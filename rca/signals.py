"""What a metric measures, read from its name, whatever the exporter called it."""

from __future__ import annotations

from enum import StrEnum

from rca.model import FaultType


class Signal(StrEnum):
    CPU = "cpu"
    MEMORY = "memory"
    DISK = "disk"
    NETWORK = "network"
    PACKET_LOSS = "packet_loss"
    LATENCY = "latency"
    ERRORS = "errors"
    TRAFFIC = "traffic"
    OTHER = "other"


_WORDS: tuple[tuple[tuple[str, ...], Signal], ...] = (
    (("latency", "duration", "responsetime", "response_time", "p90", "p95", "p99"), Signal.LATENCY),
    (("retrans", "packet_loss", "packetloss", "dropped", "drop_", "_drop"), Signal.PACKET_LOSS),
    (("success", "availability", "error", "fail", "5xx", "exception"), Signal.ERRORS),
    (("cpu",), Signal.CPU),
    (("memory", "mem_", "rss", "heap"), Signal.MEMORY),
    (("disk", "syscall", "fs_", "io_", "iops"), Signal.DISK),
    (("network", "receive", "transmit", "bytes", "packet"), Signal.NETWORK),
    (("workload", "requests", "rate", "ops", "qps", "throughput", "count"), Signal.TRAFFIC),
)


def signal_of(metric: str) -> Signal:
    """The kind of signal a metric name describes."""
    low = metric.lower()
    if low.startswith("node"):  # host-level series describe the machine, not the workload
        low = low[4:]
    for words, signal in _WORDS:
        if any(w in low for w in words):
            return signal
    return Signal.OTHER


_GOOD_WHEN_HIGH = ("success", "availability", "available", "uptime", "ok_", "apdex", "hit")


def bad_direction(metric: str) -> int:
    """+1 when a rise of this metric is the bad way (errors, latency), -1 when a fall is
    (availability, success rate)."""
    low = metric.lower()
    return -1 if any(w in low for w in _GOOD_WHEN_HIGH) else 1


def is_host_metric(metric: str) -> bool:
    return metric.lower().startswith(("node", "host", "machine"))


FAULT_OF_SIGNAL: dict[Signal, FaultType] = {
    Signal.CPU: FaultType.CPU,
    Signal.MEMORY: FaultType.MEMORY,
    Signal.DISK: FaultType.DISK,
    Signal.NETWORK: FaultType.NETWORK_DELAY,
    Signal.PACKET_LOSS: FaultType.NETWORK_LOSS,
    Signal.LATENCY: FaultType.NETWORK_DELAY,
    Signal.ERRORS: FaultType.EXCEPTION,
    Signal.TRAFFIC: FaultType.OVERLOAD,
    Signal.OTHER: FaultType.UNKNOWN,
}
