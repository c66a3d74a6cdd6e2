"""Fault families, and the seeded schedule of a recording: which service, which fault, when.

Every fault is real: inside the service's process (lab.service carries it out), or a change
made to it the way a team makes one (a new version deployed, a config pushed; lab.record
carries these out and journals the change as a deploy pipeline would). The label says only
what was done, where and when, in the words a publisher's fault list uses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lab.shop import Shop

# family -> the label's fault name (typed by rca.model.fault_type_from_text)
IN_PROCESS: dict[str, str] = {
    "cpu": "cpu_contention",  # a thread spinning inside the service
    "memory": "memory_leak",  # 4 MiB kept each second
    "disk": "disk_fill",  # 8 MiB written and synced each second
    "latency": "latency_slow_handler",  # each request held 0.15-0.45 s
    "error": "error_rate",  # half the requests refused with a 500
    "exception": "exception_code_path",  # one code path raises (a third of the items)
    "wrong": "wrong_return_body",  # a 200 whose body is not what was asked
    "pool": "pool_exhaustion_delay",  # one connection for every call out
    "retry": "retry_storm_overload",  # calls out cut short at the callee's usual answer time and sent again, up to 3 more times
}
# family -> label, for faults that are changes: each is journalled as a change when made and undone
BY_CHANGE: dict[str, str] = {
    "deploy": "faulty_release",  # restarted as a new version with a defect; rolled back at its end
    "config": "config_change",  # a pushed config cuts the service's call timeout; reverted at its end
}
# family -> label, for faults on the way to a service's backing store (lab.relay): made by the
# recorder and undone at their end. The label names the service whose store failed, the nearest
# part of the system its telemetry shows (the store itself exports nothing in the lab).
ON_THE_STORE: dict[str, str] = {
    "pause": "store_pause_delay",  # the way to the store paused (SIGSTOP): calls to it hang
    "refuse": "store_refused_error",  # the way to the store closed: connections refused and reset
}
UNDONE_AT_END = frozenset(BY_CHANGE) | frozenset(ON_THE_STORE)  # what the recorder undoes when a fault ends
LABELS: dict[str, str] = IN_PROCESS | BY_CHANGE | ON_THE_STORE
FAMILIES = tuple(LABELS)
CALL_TIMEOUT = 2.0  # seconds a service's call out may take, until a config push says otherwise
CONFIG_TIMEOUT = 0.02  # what the faulty config push sets it to
# what a faulty release carries: one of the in-process faults, built into the version
DEFECTS = ("exception", "latency", "error")


@dataclass(frozen=True, slots=True)
class PlannedFault:
    offset: float  # seconds after the recording's first fault may start
    seconds: float  # how long it lasts
    service: str
    family: str
    defect: str = ""  # a faulty release's defect (DEFECTS); empty for the other families

    @property
    def label(self) -> str:
        return LABELS[self.family]


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """A harmless change to a bystander: a new version with no defect, deployed at `offset`."""

    offset: float
    service: str


def can_suffer(shop: Shop, service: str, family: str) -> bool:
    """Whether a fault of the family on the service can show at all: a wrong answer needs a
    caller to read it, an exhausted pool needs calls out."""
    spec = shop.service(service)
    if family == "wrong":
        return service != shop.entry
    if family in ("pool", "config", "retry"):  # each acts on calls out
        return bool(spec.calls)
    if family in ON_THE_STORE:
        return bool(spec.store)
    return True


def schedule(
    shop: Shop,
    count: int,
    *,
    spacing: tuple[float, float] = (240.0, 420.0),
    duration: tuple[float, float] = (120.0, 240.0),
    families: tuple[str, ...] = FAMILIES,
) -> tuple[PlannedFault, ...]:
    """`count` faults drawn from the seed: families taken in a shuffled round so each appears,
    services at random among those that can show the family; starts `spacing` apart, each
    lasting `duration`, so some still run when the next begins."""
    unknown = set(families) - set(LABELS)
    if unknown:
        raise ValueError(f"unknown fault families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    rng = random.Random(f"faults-{shop.seed}")
    order: list[str] = []
    while len(order) < count:
        round_ = list(families)
        rng.shuffle(round_)
        order.extend(round_)
    out, at = [], 0.0
    for family in order[:count]:
        targets = [s.name for s in shop.services if can_suffer(shop, s.name, family)]
        seconds, service = round(rng.uniform(*duration), 1), rng.choice(targets)
        defect = rng.choice(DEFECTS) if family == "deploy" else ""
        out.append(PlannedFault(round(at, 1), seconds, service, family, defect))
        at += rng.uniform(*spacing)
    return tuple(out)


def bystander_changes(shop: Shop, plan: tuple[PlannedFault, ...], count: int) -> tuple[PlannedChange, ...]:
    """`count` harmless deploys drawn from the seed, at any time over the faults' span, each to
    a service no fault under way then is on: changes that a cause must not be inferred from."""
    if count <= 0 or not plan:
        return ()
    rng = random.Random(f"bystanders-{shop.seed}")
    span = max(f.offset + f.seconds for f in plan)
    out: list[PlannedChange] = []
    for _ in range(count):
        at = round(rng.uniform(0.0, span), 1)
        busy = {f.service for f in plan if f.offset - 60 <= at <= f.offset + f.seconds}
        free = [s.name for s in shop.services if s.name not in busy]
        if free:
            out.append(PlannedChange(at, rng.choice(free)))
    return tuple(sorted(out, key=lambda c: c.offset))
