"""A shop drawn from a seed: its services, who calls whom, and which store sits behind whom.

No two seeds give the same system: the number of services, the depth and fan-out of the call
graph, the stores and the names all come from the seed.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass

STORES = ("redis", "postgres", "nats")
STORE_PORTS = {"redis": 6379, "postgres": 5432, "nats": 4222}  # where this machine's shared stores listen
_NAMES = (
    "cart",
    "catalog",
    "checkout",
    "ledger",
    "search",
    "pricing",
    "stock",
    "shipping",
    "billing",
    "profile",
    "session",
    "review",
    "coupon",
    "notify",
    "audit",
    "quote",
    "basket",
    "media",
    "rating",
    "wallet",
    "order",
    "route",
    "tax",
    "fraud",
    "ads",
    "geo",
    "label",
    "refund",
)
_SUFFIXES = ("-service", "-svc", "-api", "")


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    name: str
    calls: tuple[str, ...]  # the services it calls on each request, in order
    store: str  # "redis", "postgres", "nats" or "" (none)
    work_ms: float  # CPU time spent per request on its own


@dataclass(frozen=True, slots=True)
class Shop:
    seed: int
    entry: str
    services: tuple[ServiceSpec, ...]

    def service(self, name: str) -> ServiceSpec:
        for s in self.services:
            if s.name == name:
                return s
        raise KeyError(name)

    def edges(self) -> list[tuple[str, str]]:
        return [(s.name, c) for s in self.services for c in s.calls]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @staticmethod
    def from_json(text: str) -> Shop:
        doc = json.loads(text)
        services = tuple(
            ServiceSpec(s["name"], tuple(s["calls"]), s["store"], float(s["work_ms"])) for s in doc["services"]
        )
        return Shop(int(doc["seed"]), str(doc["entry"]), services)


def draw_shop(seed: int, *, size: int | None = None) -> Shop:
    """The shop of a seed: 6-10 services (or `size`) in 3-4 layers under one entry service;
    every service is reached from the entry, and calls only go one or more layers down."""
    rng = random.Random(f"shop-{seed}")
    n = size if size is not None else rng.randint(6, 10)
    if n < 2:
        raise ValueError("a shop has at least two services")
    suffix = rng.choice(_SUFFIXES)
    names = [f"{w}{suffix}" for w in rng.sample(_NAMES, n)]
    depth = min(n - 1, rng.randint(2, 3))
    layers: list[list[str]] = [[names[0]]] + [[] for _ in range(depth)]
    for i, name in enumerate(names[1:]):  # every layer gets one, the rest at random
        layers[1 + i if i < depth else rng.randint(1, depth)].append(name)
    calls: dict[str, list[str]] = {name: [] for name in names}
    for level in range(1, depth + 1):
        for name in layers[level]:  # one caller from the layer above keeps it reachable
            calls[rng.choice(layers[level - 1])].append(name)
        for caller in (c for above in layers[:level] for c in above):  # extra fan-out
            for name in layers[level]:
                if name not in calls[caller] and rng.random() < 0.15:
                    calls[caller].append(name)
    leaves = [name for name in names[1:] if not calls[name]] or names[1:]
    stores = {name: "" for name in names}
    for name in rng.sample(leaves, min(len(leaves), rng.randint(2, 3))):
        stores[name] = rng.choice(STORES)
    services = tuple(
        ServiceSpec(name, tuple(calls[name]), stores[name], round(rng.uniform(0.5, 3.0), 2)) for name in names
    )
    return Shop(seed, names[0], services)
