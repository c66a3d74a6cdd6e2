"""The fault model: which components of the evidence make up each fault type, and how much a
component points at its own service.

Numbers here are the engine's prior about faults, the same for every system. They are held in
one frozen value so that `bench/perturb.py` can scale them all at once and show that the
ranking does not sit on a peak fitted to the development cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType

from rca.model import FaultType
from rca.signals import Signal

# a metric's signal -> its component; a series of a kind not known counts either way, as "other"
PART_OF_SIGNAL = MappingProxyType(
    {
        Signal.CPU: "cpu",
        Signal.MEMORY: "mem",
        Signal.DISK: "disk",
        Signal.LATENCY: "lat",
        Signal.ERRORS: "err",
        Signal.TRAFFIC: "traffic",
        Signal.NETWORK: "net",
        Signal.PACKET_LOSS: "loss",
        Signal.OTHER: "other",
    }
)
# a code path cut short within traces and one that fell silent overall are one component
LOG_PART = MappingProxyType({"cut": "logdrop"})

# A fault type is weighed only when one of its primary components is present: latency alone
# is not an overload, a slow service is not a CPU fault without a CPU signal, and a wrong
# result is an error without an exception, so it needs error logs: a code path that only
# stopped (its log lines gone, nothing logged instead) was cut short by a thrown exception.
GATES: Mapping[FaultType, tuple[str, ...]] = MappingProxyType(
    {
        FaultType.CPU: ("cpu",),
        FaultType.MEMORY: ("mem",),
        FaultType.DISK: ("disk",),
        FaultType.NETWORK_DELAY: ("delay", "lat", "net"),
        FaultType.NETWORK_LOSS: ("loss",),
        FaultType.EXCEPTION: ("exc", "err", "logdrop"),
        FaultType.WRONG_RESULT: ("logerr",),
        FaultType.OVERLOAD: ("traffic",),
        FaultType.UNKNOWN: ("other",),
    }
)


def _frozen(d: dict) -> Mapping:  # type: ignore[type-arg]
    return MappingProxyType(d)


@dataclass(frozen=True, slots=True)
class FaultModel:
    # the deviation (robust z) at which a metric's, or a span timing's, component reaches 63%
    metric_scale: float = 20.0
    trace_scale: float = 8.0
    # the summed log deviation at which a log component reaches 63%
    log_scales: Mapping[str, float] = field(
        default_factory=lambda: _frozen({"exc": 2.0, "logerr": 5.0, "lognew": 20.0, "logdrop": 2.0, "cut": 8.0})
    )
    # How much a component, once it stands out, points at its own service rather than at the
    # load or at a neighbour: exceptions thrown and delays on every call of a service are its
    # own, and so are the calls it gives up on and sends again; latency, traffic, I/O counters and
    # error logs also move in its callers.
    specificity: Mapping[str, float] = field(
        default_factory=lambda: _frozen(
            {
                "exc": 1.0,
                "repeat": 1.0,
                "gap": 1.0,
                "gap_out": 0.9,
                "own": 0.9,
                "cpu": 0.9,
                "mem": 0.8,
                "logdrop": 0.8,
                "logerr": 0.7,
                "err": 0.6,
                "lat": 0.5,
                "traffic": 0.2,
                "disk": 0.4,
                "net": 0.4,
                "lognew": 0.4,
                "loss": 0.8,
                "other": 0.3,
            }
        )
    )
    # fault type -> (component, weight) pairs; the weights of a type add up to 1
    recipes: Mapping[FaultType, tuple[tuple[str, float], ...]] = field(
        default_factory=lambda: _frozen(
            {
                FaultType.CPU: (("cpu", 0.5), ("gap", 0.3), ("own", 0.1), ("gap_out", 0.1)),
                FaultType.MEMORY: (("mem", 0.75), ("lat", 0.15), ("own", 0.1)),
                FaultType.DISK: (("disk", 0.75), ("own", 0.25)),
                FaultType.NETWORK_DELAY: (("delay", 0.6), ("lat", 0.25), ("net", 0.15)),
                FaultType.NETWORK_LOSS: (("loss", 0.6), ("err", 0.2), ("gap", 0.2)),
                FaultType.EXCEPTION: (("exc", 0.5), ("logdrop", 0.3), ("err", 0.1), ("logerr", 0.1)),
                FaultType.WRONG_RESULT: (("logerr", 0.45), ("logdrop", 0.3), ("lognew", 0.15), ("err", 0.1)),
                FaultType.OVERLOAD: (("traffic", 0.4), ("lat", 0.4), ("cpu", 0.2)),
                FaultType.UNKNOWN: (("other", 1.0),),
            }
        )
    )
    default_specificity: float = 0.3  # a component not named above (a host's, say)

    def scaled(self, factor: Callable[[], float]) -> FaultModel:
        """Every number of the model (scales, specificities, recipe weights) times its own
        `factor()`: another reading of the same prior."""
        return replace(self, **scaled_fields(self, factor))  # type: ignore[arg-type]


def scaled_fields(obj: object, factor: Callable[[], float]) -> dict[str, object]:
    """A dataclass's float fields, and the floats and recipe weights of its mapping fields,
    each times its own `factor()` (drawn in field order); other fields are left out."""
    changes: dict[str, object] = {}
    for f in fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if isinstance(value, float):
            changes[f.name] = value * factor()
        elif isinstance(value, Mapping):
            changes[f.name] = MappingProxyType({k: _scaled(v, factor) for k, v in value.items()})
    return changes


def _scaled(value: object, factor: Callable[[], float]) -> object:
    if isinstance(value, float):
        return value * factor()
    if isinstance(value, tuple):  # a recipe: (component, weight) pairs
        return tuple((part, w * factor()) for part, w in value)
    return value


def saturate(z: float, k: float) -> float:
    """Map a non-negative deviation to [0, 1): k is where it reaches 63%."""
    return 1.0 - math.exp(-max(z, 0.0) / k)


def depth(share: float, z: float, k: float) -> float:
    """A component of strength `share * saturate(z, k)` as the deviation it stands for, in units
    of k: -log(1 - strength). It orders as the strength does, and it keeps apart deviations
    that the strength, a float, rounds to the same 1.0 (z above about 37 k)."""
    if share >= 1.0:
        return max(z, 0.0) / k
    return -math.log1p(share * math.expm1(-max(z, 0.0) / k)) if share > 0 else 0.0
