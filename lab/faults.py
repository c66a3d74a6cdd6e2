"""Fault families, and the seeded schedule of a recording: which service, which fault, when.

Every fault is real inside the service's process (lab.service carries it out); the label says
only what was done, where and when, in the words a publisher's fault list uses.
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
}
FAMILIES = tuple(IN_PROCESS)


@dataclass(frozen=True, slots=True)
class PlannedFault:
    offset: float  # seconds after the recording's first fault may start
    seconds: float  # how long it lasts
    service: str
    family: str

    @property
    def label(self) -> str:
        return IN_PROCESS[self.family]


def can_suffer(shop: Shop, service: str, family: str) -> bool:
    """Whether a fault of the family on the service can show at all: a wrong answer needs a
    caller to read it, an exhausted pool needs calls out."""
    spec = shop.service(service)
    if family == "wrong":
        return service != shop.entry
    if family == "pool":
        return bool(spec.calls)
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
    unknown = set(families) - set(IN_PROCESS)
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
        out.append(PlannedFault(round(at, 1), round(rng.uniform(*duration), 1), rng.choice(targets), family))
        at += rng.uniform(*spacing)
    return tuple(out)
