"""Rule `calls`: a callee's slowness reaches its caller only through the calls between them,
slowed on the callee's side."""

from __future__ import annotations

import itertools

import networkx as nx

from rca.rules.board import Board
from rca.rules.causality import Causality

_PATHS = 20  # shortest paths looked at per pair: enough for any call graph's fan-in


def slowness_passes(caller: str, callee: str, board: Board, when: Causality) -> bool:
    """Whether the callee's slowness can have reached the caller: some shortest call path
    from one to the other has no call the traces timed that is not slowed on the callee's
    side while the caller's anomaly goes on (never slowed, its slowing ended, or it left a
    service whose own side slowed most of its calls: rca.evidence.toolbox.Toolbox.edge_share).
    Untimed calls do not object."""

    def quiet(a: str, b: str) -> bool:
        share = board.edge_share(a)
        if b not in share.timed:
            return False
        if share.outgoing > 0:  # its own side slowed its calls: the call's slowness is the caller's
            return True
        still = when.slowed.get(f"{a}->{b}")
        return still is None or (not still and caller in when.going)

    try:
        paths = itertools.islice(nx.all_shortest_paths(board.graph, caller, callee), _PATHS)
        return any(not any(quiet(a, b) for a, b in itertools.pairwise(p)) for p in paths)
    except nx.NetworkXNoPath:
        return True
