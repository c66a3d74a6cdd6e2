"""Rule `delays`: a delay is time lost where the service is, on its way in or in its own work
where none of its own resources moved as far."""

from __future__ import annotations

from rca.evidence import EvidenceId

RESOURCES = ("cpu", "mem")  # what a process's own work waits on, where it moved with it


def delay_where_it_is(parts: dict[str, float], cites: dict[str, list[EvidenceId]], *, own_work: bool = True) -> None:
    """Set the `delay` part: the time a service lost on its way in (`gap`) or, where it lost
    more in its own work (`own`, its spans' self time: a slow handler, a lock, a store that
    hangs) than any of its resources moved, that. Work slowed as far as its CPU or memory moved
    is that resource's doing (a hog, a collector), its fault's and not a delay. Without the
    rule (`own_work=False`) a delay is only one on the way in. `parts` are strengths (after
    specificity), so the comparison is in the one scale the fault recipes weigh."""
    gap, own = parts.get("gap", 0.0), parts.get("own", 0.0)
    if own_work and own > gap and own > max(parts.get(r, 0.0) for r in RESOURCES):
        parts["delay"], cites["delay"] = own, list(cites.get("own", []))
    elif gap > 0:
        parts["delay"], cites["delay"] = gap, list(cites.get("gap", []))
