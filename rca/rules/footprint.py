"""Rule `footprint`: memory that rose with the CPU, not before it, is the CPU fault's footprint;
a process's series are sampled together, so more than a sample ahead is before."""

from __future__ import annotations

from rca.evidence import EvidenceId
from rca.topology import ONSET_TOLERANCE


def fold_memory_into_cpu(
    parts: dict[str, float],
    cites: dict[str, list[EvidenceId]],
    cpu_began: float | None,
    mem_began: float | None,
    step: float = 0.0,
) -> None:
    """A process that burns CPU allocates as it goes; a leak shows in memory first, and the
    CPU of its collector follows. Memory whose rise has no onset while the CPU's has one was
    under way or creeping before: not folded. A process's own series are sampled together
    (`step`: their shared sampling step), so memory more than a sample ahead of the CPU began
    first; the skew forgiven between sources (ONSET_TOLERANCE) is the bound where no step is
    known."""
    if parts.get("cpu", 0.0) <= 0 or parts.get("mem", 0.0) <= 0:
        return
    ahead = step if step > 0 else ONSET_TOLERANCE
    if cpu_began is not None and (mem_began is None or mem_began < cpu_began - ahead):
        return
    parts["cpu"] = max(parts["cpu"], parts["mem"])
    cites["cpu"].extend(cites.pop("mem", []))
    del parts["mem"]
