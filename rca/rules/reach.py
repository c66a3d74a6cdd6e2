"""Rule `reach`: a service the symptom does not call, even indirectly, cannot have caused it."""

from __future__ import annotations

import networkx as nx

from rca.rules.board import Board


def discount_unreachable(values: dict[str, float], board: Board, *, factor: float) -> dict[str, float]:
    """Services out of the symptom's reach keep `factor` of their value (the graph may be
    incomplete, so they are not dropped)."""
    if board.symptom not in board.graph:
        return values
    downstream = nx.descendants(board.graph, board.symptom) | {board.symptom}
    return {e: v if e in downstream else v * factor for e, v in values.items()}
