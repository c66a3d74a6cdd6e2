"""Rules `victims` and `named_callees`: a service whose anomaly an anomalous
callee can explain is that callee's victim."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from rca.model import FaultType
from rca.rules.board import Board
from rca.rules.calls import slowness_passes
from rca.rules.causality import Causality

ERRING = (FaultType.EXCEPTION, FaultType.WRONG_RESULT)


@dataclass(frozen=True, slots=True)
class VictimTerms:
    keep: float  # a service explained by an anomalous callee keeps this share
    error_keep: float  # ... or this, when both err
    ratio: float  # the callee must carry at least this share of the service's value
    error_ratio: float  # ... when both err (errors propagate to callers)
    mismatch_ratio: float  # an erring service explained by a callee that only slowed
    slow_by_errors_ratio: float  # a slow service explained by a callee that only fails
    hops: int
    named_callees: bool = True
    calls: bool = True


def explaining_callee(
    entity: str, values: dict[str, float], board: Board, when: Causality, terms: VictimTerms
) -> str | None:
    """The most valuable anomalous callee that can explain the service, if any: one whose
    anomaly began no later than the service's and had not ended then; where the service's
    failed calls name callees, one of those or behind them; not one the service gave up on
    calls to and sent them again (its load is the service's making); and, unless it fails,
    one whose slowness the timed calls between them let through (rca.rules.calls)."""
    value, faults, graph = values[entity], board.faults, board.graph

    def ratio(d: str) -> float:
        """How much of the service's value a callee must carry to explain it."""
        if faults.get(entity) not in ERRING:
            return terms.slow_by_errors_ratio if faults.get(d) in ERRING else terms.ratio
        return terms.error_ratio if faults.get(d) in ERRING else terms.mismatch_ratio

    reach = set(nx.single_source_shortest_path_length(graph, entity, cutoff=terms.hops))
    if terms.named_callees and (named := when.failed_on.get(entity)):
        reach &= {
            d for c in named if c in graph for d in nx.single_source_shortest_path_length(graph, c, cutoff=terms.hops)
        }
    culprits = [
        d
        for d in reach
        if d != entity
        and d not in when.stormed.get(entity, ())  # its load is the service's own retries (rule `answers`)
        and values.get(d, 0.0) >= value * ratio(d)
        and when.was_active(d, when.began.get(entity))
        and (not terms.calls or faults.get(d) in ERRING or slowness_passes(entity, d, board, when))
    ]
    return max(culprits, key=lambda d: values[d]) if culprits else None


def victim_share(entity: str, callee: str, board: Board, terms: VictimTerms) -> float:
    """The share of its value a victim keeps."""
    erred = board.faults.get(entity) in ERRING and board.faults.get(callee) in ERRING
    return terms.error_keep if erred else terms.keep
