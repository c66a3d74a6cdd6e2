"""What a metric measures, read from its name, whatever the exporter called it.

A name is cut into words (at separators, camelCase and digit boundaries: `PodServerLatencyP90(s)`
-> pod server latency p90 s; `container_memory_working_set_bytes`; `lat_99`; `node_load1`) and
the words are looked up in the vocabularies of the common exporters and conventions: cAdvisor
(`container_*`), node-exporter (`node_*`), kube-state-metrics (`kube_*`), OpenTelemetry's
semantic conventions (`http.server.request.duration`, `process.cpu.utilization`), Micrometer
(`jvm_memory_used_bytes`, `http_server_requests_seconds_*`) and the short forms of hand-made
exports (`cpu`, `mem`, `rss`, `heap`, `gc`, `lat_50`, `lat_p99`, `load`, `qps`, `5xx`, `errors`,
`io`, `disk`, `power`). A name with none of these words is `Signal.OTHER`: still an anomaly of
its entity, of a kind not known.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache

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


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PARTS = re.compile(r"[a-z]+|\d+[a-z]*")
_PERCENTILE = re.compile(r"^p\d{2,3}$")


NAMES_KEPT = 4096  # metric names whose reading is remembered: a system's names, not a hostile stream of them


@lru_cache(maxsize=NAMES_KEPT)
def words(metric: str) -> tuple[str, ...]:
    """The words of a metric name, lower-cased: `PodServerLatencyP90(s)` -> pod, server,
    latency, p90, s; `node_load1` -> node, load, 1; `5xx` stays whole."""
    out: list[str] = []
    for chunk in re.split(r"[^0-9A-Za-z]+", _CAMEL.sub(" ", metric)):
        low = chunk.lower()
        if not low:
            continue
        if _PERCENTILE.match(low) or re.fullmatch(r"\dxx", low):
            out.append(low)
            continue
        out.extend(_PARTS.findall(low))
    return tuple(out)


# Word lists per signal, tried in this order: a CPU or an error word decides before a unit
# word does (`container_cpu_usage_seconds_total` is CPU, `http_server_errors_total` errors).
_CPU = {
    "cpu",
    "cpus",
    "vcpu",
    "processor",
    "power",
    "energy",
    "watts",
    "joules",
    "load",
    "loadavg",
    "throttled",
    "throttling",
    "cfs",
    "steal",
}
_ERRORS = {
    "error",
    "errors",
    "err",
    "errs",
    "fail",
    "failed",
    "failure",
    "failures",
    "fault",
    "faults",
    "5xx",
    "exception",
    "exceptions",
    "success",
    "successful",
    "availability",
    "unavailable",
    "restart",
    "restarts",
    "crash",
    "crashes",
    "crashloop",
    "panic",
    "panics",
    "timeout",
    "timeouts",
    "rejected",
    "refused",
    "oomkilled",
    "apdex",
}
_LOSS = {
    "retrans",
    "retransmit",
    "retransmits",
    "retransmitted",
    "retransmission",
    "retransmissions",
    "dropped",
    "drop",
    "drops",
    "loss",
    "lost",
}
_MEMORY = {
    "memory",
    "mem",
    "rss",
    "heap",
    "nonheap",
    "gc",
    "oom",
    "swap",
    "resident",
    "alloc",
    "allocated",
    "allocation",
    "allocations",
    "malloc",
    "pss",
}
_DISK = {
    "disk",
    "disks",
    "io",
    "iops",
    "fs",
    "filesystem",
    "blkio",
    "inode",
    "inodes",
    "volume",
    "storage",
    "iowait",
    "read",
    "write",
    "reads",
    "writes",
}
_LATENCY = {
    "latency",
    "latencies",
    "lat",
    "duration",
    "durations",
    "response",
    "responsetime",
    "rt",
    "delay",
    "elapsed",
    "seconds",
    "wait",
    "slow",
}
_NETWORK = {
    "network",
    "net",
    "receive",
    "received",
    "transmit",
    "transmitted",
    "rx",
    "tx",
    "packets",
    "packet",
    "tcp",
    "udp",
    "socket",
    "sockets",
    "bandwidth",
    "ingress",
    "egress",
    "bytes",
}
_TRAFFIC = {
    "workload",
    "requests",
    "request",
    "req",
    "reqs",
    "qps",
    "rps",
    "tps",
    "throughput",
    "ops",
    "calls",
    "invocations",
    "messages",
    "count",
    "hits",
    "sessions",
    "connections",
    "users",
    "active",
}
_COUNT_ENDINGS = {"count", "total"}  # `..._seconds_count` counts requests, it does not time them


@lru_cache(maxsize=NAMES_KEPT)
def signal_of(metric: str) -> Signal:
    """The kind of signal a metric name describes."""
    ws = words(metric)
    if ws and ws[0] in _HOSTS:  # host-level series describe the machine; their words still say what
        ws = ws[1:]
    found = set(ws)
    if found & _CPU:
        return Signal.CPU
    if found & _ERRORS:
        return Signal.ERRORS
    if found & _LOSS:
        return Signal.PACKET_LOSS
    if found & _MEMORY:
        return Signal.MEMORY
    if found & {"syscall", "syscalls"}:  # system calls count the work a process does, disk or not
        return Signal.TRAFFIC
    if found & {"network", "net"}:  # a network's io is not a disk's (OpenTelemetry's `k8s.pod.network.io`)
        return Signal.NETWORK
    if found & {"disk", "disks", "fs", "filesystem", "blkio", "iops", "iowait", "io"}:
        return Signal.DISK
    if found & _NETWORK - {"bytes"}:
        return Signal.NETWORK
    if any(_PERCENTILE.match(w) for w in ws) or found & _LATENCY:
        if found & {"seconds"} and not found & (_LATENCY - {"seconds"}) and ws[-1] in _COUNT_ENDINGS:
            return Signal.TRAFFIC
        return Signal.LATENCY
    if found & _DISK:
        return Signal.DISK
    if found & _TRAFFIC:
        return Signal.TRAFFIC
    if found & _NETWORK:
        return Signal.NETWORK
    return Signal.OTHER


# words of a series where a fall, not a rise, is the bad way
_GOOD_WHEN_HIGH = {
    "success",
    "successful",
    "availability",
    "available",
    "avail",
    "uptime",
    "up",
    "ok",
    "apdex",
    "hit",
    "hits",
    "free",
    "idle",
    "ready",
    "healthy",
    "alive",
}


# what a process's own series measure (its CPU, memory and GC, disk, descriptors), as against
# what the ones it serves feel (latency, errors, traffic, the network)
PROCESS_SIGNALS = frozenset({Signal.CPU, Signal.MEMORY, Signal.DISK, Signal.OTHER})


def bad_direction(metric: str) -> int:
    """+1 when a rise of this metric is the bad way (errors, latency), -1 when a fall is
    (availability, success rate, free memory, idle CPU)."""
    return -1 if set(words(metric)) & _GOOD_WHEN_HIGH else 1


# a series of the calls a service makes, as it timed and counted them, not of those it answered:
# OpenTelemetry's `http.client.*`, `ClientErrorRate`, Envoy's `upstream_rq_*`, `outbound`
_CLIENT_SIDE = {"client", "outbound", "upstream"}


def is_client_side(metric: str) -> bool:
    """A series of the calls a service makes (their latency, their failures), which its
    callees' faults move, as against one of the requests it answers."""
    return bool(set(words(metric)) & _CLIENT_SIDE)


_HOSTS = {"node", "host", "machine", "system"}


def is_host_metric(metric: str) -> bool:
    """A series of the machine a workload runs on, not of the workload (node-exporter's
    `node_*`, OpenTelemetry's and Micrometer's `system.*`)."""
    ws = words(metric)
    return bool(ws) and ws[0] in _HOSTS


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
