"""Rule `kpi`: a KPI measured in front of the services (an entry's success rate and latency) is
where an incident shows, not what caused it: it runs no code and holds no resources of its own."""

from __future__ import annotations

from rca.rules.board import Board
from rca.topology import is_kpi


def drop_kpis(values: dict[str, float], board: Board) -> dict[str, float]:
    """Every value but those of the entities the call graph marks as KPIs (a graph that marks
    none, a live one read from traces say, drops nothing)."""
    return {e: v for e, v in values.items() if not is_kpi(board.graph, e)}
