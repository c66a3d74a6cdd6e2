"""Rule `footprint`: memory that rose with the CPU, not before it, is the CPU fault's footprint."""

from __future__ import annotations

from rca.evidence import EvidenceId
from rca.topology import ONSET_TOLERANCE


def fold_memory_into_cpu(
    parts: dict[str, float], cites: dict[str, list[EvidenceId]], cpu_began: float | None, mem_began: float | None
) -> None:
    """A process that burns CPU allocates as it goes; a leak shows in memory first, and the
    CPU of its collector follows. Memory whose rise has no onset while the CPU's has one was
    under way or creeping before: not folded."""
    if parts.get("cpu", 0.0) <= 0 or parts.get("mem", 0.0) <= 0:
        return
    if cpu_began is not None and (mem_began is None or mem_began < cpu_began - ONSET_TOLERANCE):
        return
    parts["cpu"] = max(parts["cpu"], parts["mem"])
    cites["cpu"].extend(cites.pop("mem", []))
    del parts["mem"]
