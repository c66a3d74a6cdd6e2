"""Questions about the call graph that the search, the audit and the patches all ask."""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx


def neighbours(graph: nx.DiGraph, entities: str | Iterable[str]) -> set[str]:
    """The callers and callees of one entity, or of several together."""
    names = [entities] if isinstance(entities, str) else list(entities)
    out: set[str] = set()
    for e in names:
        if e in graph:
            out.update(graph.successors(e))
            out.update(graph.predecessors(e))
    return out
