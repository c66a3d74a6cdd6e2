"""What the evidence tells about order and blame, for telling causes from effects."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rca.evidence import Evidence, EvidenceId, EvidenceKind, earliest_onsets
from rca.topology import ONSET_TOLERANCE, in_causal_order


@dataclass(frozen=True, slots=True)
class Causality:
    active: dict[str, list[tuple[float, float | None]]]  # per entity, (onset, until) of its anomalies
    began: dict[str, float]  # when the anomaly that makes each entity a suspect began
    under_way: set[str]  # entities whose placed anomalies were all under way before their data began
    failed_on: dict[str, set[str]]  # the callees each service's failed calls name
    going: frozenset[str] = frozenset()  # entities whose cited anomaly of this incident goes on at the close
    slowed: dict[str, bool] = field(default_factory=dict)  # per call "a->b" seen slowed: whether it still is
    # when each entity's anomaly in its work began (its calls, answers, logs and spans), not in
    # its process's own resources (Evidence.of_process): what changes the calls it sends
    working: dict[str, float] = field(default_factory=dict)
    # the callees each service gave up on calls to and sent them again (a retry storm of its making)
    stormed: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        everything: Sequence[Evidence],
        cited: dict[str, set[EvidenceId]],
        current: frozenset[EvidenceId] | None = None,
    ) -> Causality:
        """From all the evidence when each anomaly ran; from this incident's (`current`, all
        when None) when each suspect's began and what its failed calls name."""
        active: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
        for ev in everything:
            if ev.onset is not None:
                active[ev.entity].append((ev.onset, ev.until))
        evidence = [ev for ev in everything if current is None or ev.id in current]
        failed_on: dict[str, set[str]] = defaultdict(set)
        stormed: dict[str, set[str]] = defaultdict(set)
        for ev in evidence:
            if ev.kind is EvidenceKind.LOG_DEPENDENCY_ERROR:
                failed_on[ev.entity].update(ev.peers)
            elif ev.kind is EvidenceKind.TRACE_REPEATED_CALLS:
                stormed[ev.entity].update(ev.peers)
        # from the evidence the entity's hypothesis cites, or from any of its evidence where
        # none of that is placed
        began = earliest_onsets(evidence) | earliest_onsets(ev for ev in evidence if ev.id in cited.get(ev.entity, ()))
        working = earliest_onsets(ev for ev in evidence if not ev.of_process)
        fresh = {ev.entity for ev in evidence if ev.onset is not None and not ev.under_way}
        under_way = {ev.entity for ev in evidence if ev.onset is not None} - fresh
        going = frozenset(ev.entity for ev in evidence if ev.until is None and ev.id in cited.get(ev.entity, ()))
        slowed: dict[str, bool] = {}
        for ev in everything:
            if ev.kind is EvidenceKind.TRACE_EDGE_LATENCY:
                slowed[ev.subject] = slowed.get(ev.subject, False) or ev.until is None
        return cls(active, began, under_way, failed_on, going, slowed, working, dict(stormed))

    def was_active(self, entity: str, when: float | None) -> bool:
        """Some anomaly of the entity had begun by `when` and not yet ended (unknown times do
        not object)."""
        intervals = self.active.get(entity, [])
        if not intervals or when is None:
            return True
        return any(
            in_causal_order(onset, when) and (until is None or until >= when - ONSET_TOLERANCE)
            for onset, until in intervals
        )
