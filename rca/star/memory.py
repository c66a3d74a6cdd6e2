"""Repair memory: what past repairs of similar incidents blamed and which patch worked.

The engine sees only this Protocol; `storage/` keeps it in SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rca.trace import Trace


@dataclass(frozen=True, slots=True)
class Pattern:
    """An incident in RCA terms: what it looks like, not what it is called."""

    fault_type: str  # the dominant anomaly type (the leading hypothesis' fault type)
    modalities: str  # which modalities exist, e.g. "metrics+traces"
    degree: int  # call-graph degree of the leading suspect, bucketed
    sparsity: int  # evidence items, bucketed

    @classmethod
    def of(cls, trace: Trace, degree: int) -> Pattern:
        ep = trace.evidence_package
        mods = "+".join(m for m, ok in sorted(ep.modalities.items()) if ok) or "none"
        fault = trace.hypotheses[0].fault_type.value if trace.hypotheses else "unknown"
        return cls(fault, mods, min(degree, 8) // 2, min(len(ep.evidence), 64) // 8)

    def distance(self, other: Pattern) -> float:
        if (self.fault_type, self.modalities) != (other.fault_type, other.modalities):
            return float("inf")
        return abs(self.degree - other.degree) + abs(self.sparsity - other.sparsity)


@dataclass(frozen=True, slots=True)
class RepairRecord:
    pattern: Pattern
    stage: str
    patch: str
    improvement: float


class RepairMemory(Protocol):
    def similar(self, pattern: Pattern, *, limit: int = 5) -> Sequence[RepairRecord]:
        """Past repairs of the nearest patterns, most useful first."""
        ...

    def remember(self, record: RepairRecord) -> None:
        """Keep one successful repair."""
        ...


class InMemoryRepairMemory:
    """A RepairMemory in a list, for tests and one-off runs."""

    def __init__(self) -> None:
        self.records: list[RepairRecord] = []

    def similar(self, pattern: Pattern, *, limit: int = 5) -> Sequence[RepairRecord]:
        near = [r for r in self.records if pattern.distance(r.pattern) != float("inf")]
        near.sort(key=lambda r: (pattern.distance(r.pattern), -r.improvement))
        return near[:limit]

    def remember(self, record: RepairRecord) -> None:
        self.records.append(record)
