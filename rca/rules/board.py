"""What the value rules read: the hypotheses' values so far and what the evidence says."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import networkx as nx

from rca.changes import Change
from rca.evidence import Evidence, EvidenceId
from rca.evidence.traces import NO_GAPS, GapShare
from rca.model import FaultType
from rca.telemetry import Window


@dataclass(frozen=True, slots=True)
class Board:
    """The evidence behind the hypotheses and the call graph they sit in."""

    evidence: Sequence[Evidence]
    graph: nx.DiGraph
    window: Window
    symptom: str
    faults: dict[str, FaultType]  # each service's best fault type
    cites: dict[str, set[EvidenceId]]  # the evidence each service's hypothesis cites
    current: frozenset[EvidenceId]  # the evidence of the incident asked about (rule `timing`)
    # per service, its calls' network-gap shares and the callees whose calls the traces timed
    edge_share: Callable[[str], GapShare] = field(default=lambda _: NO_GAPS)
    # the evidence rule `timing` set aside only because it ran since before the data, where the
    # data began inside the window (rca.rules.timing.undatable): time cannot place it
    undatable: frozenset[EvidenceId] = frozenset()
    changes: tuple[Change, ...] = ()  # deploys, config pushes and the like around the window
    # the process series a restart moved by itself (rule `changes`): no evidence against the service
    restarted: frozenset[EvidenceId] = frozenset()
    began: float | None = None  # when the symptom's degradation began (rule `timing`), where it is known
