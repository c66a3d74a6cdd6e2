"""Questions about the call graph (and the order of events along it) that the search, the
audit and the patches all ask."""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

ONSET_TOLERANCE = 60.0  # seconds of clock skew and sampling forgiven between a cause and its effect
# A node attribute: the node is a KPI measured in front of the services (an entry's success rate
# and latency), drawn as a caller of the services it measures, not a workload of its own.
KPI = "kpi"


def is_kpi(graph: nx.DiGraph, node: str) -> bool:
    """Whether the call graph marks `node` as a KPI in front of the services."""
    return node in graph and bool(graph.nodes[node].get(KPI, False))


def in_causal_order(onset_cause: float | None, onset_effect: float | None) -> bool:
    """The cause's anomaly does not start after its effect's (unknown onsets do not object)."""
    return onset_cause is None or onset_effect is None or onset_cause <= onset_effect + ONSET_TOLERANCE


def neighbours(graph: nx.DiGraph, entities: str | Iterable[str]) -> set[str]:
    """The callers and callees of one entity, or of several together."""
    names = [entities] if isinstance(entities, str) else list(entities)
    out: set[str] = set()
    for e in names:
        if e in graph:
            out.update(graph.successors(e))
            out.update(graph.predecessors(e))
    return out


def siblings(graph: nx.DiGraph, entity: str) -> set[str]:
    """The other callees of an entity's callers."""
    if entity not in graph:
        return set()
    return {s for c in graph.predecessors(entity) for s in graph.successors(c)} - {entity}
