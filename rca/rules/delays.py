"""Rule `delays`: a delay is time lost where the service is, on its way in or in its own work
where neither its callees nor its own resources can account for it."""

from __future__ import annotations

from rca.evidence import EvidenceId

RESOURCES = ("cpu", "mem")  # what a process's own work waits on, where it moved with it


def delay_where_it_is(parts: dict[str, float], cites: dict[str, list[EvidenceId]], *, own_work: bool = True) -> None:
    """Set the `delay` part: the time a service lost on its way in (`gap`) or, where it lost
    more in its own work (`own`, its spans' self time: a slow handler, a lock, a store that
    hangs) than any of its resources moved, that. Work slowed as far as its CPU or memory moved
    is that resource's doing (a hog, a collector), its fault's and not a delay. A service's own
    time is what its spans hold beyond its callees' spans, and a call's time on the wire or in a
    queue is in neither: where a callee of it is anomalous, its own time may be time waited on it
    (`own_work=False`, as without the rule: a delay is then only one on the way in). `parts`
    are strengths (after specificity), so the comparison is in the one scale the recipes weigh."""
    gap, own = parts.get("gap", 0.0), parts.get("own", 0.0)
    if own_work and own > gap and own > max(parts.get(r, 0.0) for r in RESOURCES):
        parts["delay"], cites["delay"] = own, list(cites.get("own", []))
    elif gap > 0:
        parts["delay"], cites["delay"] = gap, list(cites.get("gap", []))
