"""Rule `delays`: a delay is time lost where the service is, on its way in or in its own work
where neither its callees nor its own resources can account for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import networkx as nx

from rca.evidence import EvidenceId
from rca.evidence.traces import NO_GAPS, GapShare

RESOURCES = ("cpu", "mem")  # what a process's own work waits on, where it moved with it


def place_delays(
    parts: Mapping[str, dict[str, float]],
    cites: Mapping[str, dict[str, list[EvidenceId]]],
    graph: nx.DiGraph,
    *,
    own_work: bool = True,
    edge_share: Callable[[str], GapShare] = lambda _: NO_GAPS,
) -> None:
    """Per service (`parts` and `cites` by service, parts as strengths after specificity, the
    one scale the recipes weigh), set its `delay` part: the time it lost on its way in (`gap`)
    or, where it lost more in its own work (`own`, its spans' self time: a slow handler, a lock,
    a store that hangs), that.

    Own time counts only where none of the service's resources moved as far (work slowed as
    far as its CPU or memory moved is that resource's doing: a hog, a collector) and no callee
    of it is anomalous: a span's own time is what it holds beyond its callees' spans, and a
    call's time on the wire or in a queue is in neither, so a caller's own time may be time
    waited on an anomalous callee; but not where its own side slowed most of its calls out
    before they left (`edge_share(...).outgoing`: a pool it waits for, a queue of its own),
    which no callee can account for. Without the rule (`own_work=False`) a delay is only one
    on the way in."""
    anomalous = {e for e, p in parts.items() if any(v > 0 for v in p.values())}
    for entity, p in parts.items():
        waits = (
            entity in graph
            and edge_share(entity).outgoing == 0
            and any(c in anomalous for c in graph.successors(entity) if c != entity)
        )
        gap, own = p.get("gap", 0.0), p.get("own", 0.0)
        if own_work and not waits and own > gap and own > max(p.get(r, 0.0) for r in RESOURCES):
            p["delay"], cites[entity]["delay"] = own, list(cites[entity].get("own", []))
        elif gap > 0:
            p["delay"], cites[entity]["delay"] = gap, list(cites[entity].get("gap", []))
