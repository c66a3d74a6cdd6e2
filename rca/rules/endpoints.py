"""Rule `endpoints`: an endpoint seen only from its callers' side that moves with a sibling
callee is that sibling seen through a proxy."""

from __future__ import annotations

from collections import defaultdict

import networkx as nx

from rca.evidence import Evidence, EvidenceKind
from rca.profiles import move_together, profile_step
from rca.rules.board import Board
from rca.signals import Signal
from rca.topology import siblings

_OUTSIDE_SIGNALS = (Signal.LATENCY, Signal.ERRORS, Signal.TRAFFIC)  # what a caller can measure of a callee


def discount_endpoints(
    values: dict[str, float], board: Board, *, comove: float, sibling_ratio: float, keep: float
) -> dict[str, float]:
    """An endpoint seen only from outside (it calls nothing; its evidence is latency, errors
    and traffic as its callers measure them, no resources, logs or spans of its own) whose
    anomaly moves with a sibling's (another callee of the same caller, one that does call on,
    with the same fault type and at least `sibling_ratio` of its value) keeps `keep` of its
    value: it is most likely that sibling seen from the caller's side, such as a load
    balancer in front of it."""
    graph = board.graph
    profiled: dict[str, list[Evidence]] = defaultdict(list)
    inside: set[str] = set()
    for ev in board.evidence:
        if ev.profile:
            profiled[ev.entity].append(ev)
        if ev.kind is not EvidenceKind.METRIC_SHIFT or ev.signal not in _OUTSIDE_SIGNALS:
            inside.add(ev.entity)
    step = profile_step([e for evs in profiled.values() for e in evs])
    out = dict(values)
    for leaf, value in values.items():
        if leaf not in graph or leaf in inside or graph.out_degree(leaf) > 0 or not profiled.get(leaf):
            continue
        mine = max(profiled[leaf], key=lambda e: e.score)
        for s in siblings(graph, leaf):
            if (
                graph.out_degree(s) == 0
                or board.faults.get(s) != board.faults.get(leaf)
                or values.get(s, 0.0) < sibling_ratio * value
            ):
                continue
            if nx.has_path(graph, s, leaf):  # a service that calls the endpoint is not behind it
                continue
            theirs = [e for e in profiled.get(s, []) if e.signal == mine.signal]
            if any(move_together(mine.profile, e.profile, step, comove) for e in theirs):
                out[leaf] = value * keep
                break
    return out
