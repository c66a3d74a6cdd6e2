"""Rule `answers`: a callee whose anomaly began well after an anomalous caller's work, or
that the calls the caller gave up on and sent again reach, is answering the caller's changed
calls.

A caller changes the calls it sends only through its work (what it sends, answers and logs),
never through its process's own resources: memory it kept, descriptors it holds or CPU it burnt
since an earlier incident say nothing of its calls, so only an anomaly in its work places the
caller before its callee.

Downstream (`DOWNSTREAM`, its own ablation switch): a call sent again is answered with the calls
its answer needs, so a storm reaches past the callees it names: a service those callees call
(within the hops a victim is looked for) takes the storm's load as they do. Without the switch
only the callees the resent calls name answer them."""

from __future__ import annotations

import networkx as nx

from rca.rules.board import Board
from rca.rules.causality import Causality
from rca.topology import in_causal_order

# the ablation switch of a storm's resent calls reaching, through the callees that answered them,
# what those callees call
DOWNSTREAM = "downstream"


def earlier_caller(
    entity: str,
    values: dict[str, float],
    board: Board,
    when: Causality,
    *,
    ratio: float,
    hops: int,
    downstream: bool = True,
) -> str | None:
    """A caller that stands out about as much (at least `ratio` of the callee's value) and
    whose anomaly in its work began in the window well before this callee's, or that gave up
    on calls to this callee and sent them again (its retries are load it sends, whenever the
    callee's anomaly began): the callee most likely answers its changed calls (retries, a new
    mix of requests) rather than causing them."""
    if entity not in when.began:
        return None
    ups = nx.single_source_shortest_path_length(board.graph.reverse(copy=False), entity, cutoff=hops)

    def stormed(caller: str) -> bool:
        """Its resent calls reach the callee: sent to it, or (`downstream`) to a service whose
        calls, within `hops` of the caller, reach it: a resent call is answered with the calls
        its answer needs."""
        direct = when.stormed.get(caller, set())
        if entity in direct:
            return True
        # `ups` holds each caller's distance to this callee within `hops`: no second search
        return downstream and any(ups.get(s, hops) <= hops - 1 for s in direct)

    earlier = [
        c
        for c in ups
        if c != entity
        and c in when.working
        and values.get(c, 0.0) >= values[entity] * ratio
        and c not in when.under_way
        and (stormed(c) or not in_causal_order(when.began[entity], when.working[c]))
    ]
    return max(earlier, key=lambda c: values[c]) if earlier else None
