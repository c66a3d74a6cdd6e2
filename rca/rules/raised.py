"""Rule `raised`: an error a service answered with is one it raised, so the error lines it
wrote while its own answers failed report an exception, whatever their words."""

from __future__ import annotations

from collections.abc import Iterable

from rca.evidence import Evidence, EvidenceKind
from rca.signals import Signal, is_client_side


def failing_answers(evidence: Iterable[Evidence], this_incident: Iterable[Evidence]) -> frozenset[str]:
    """The services whose own answers failed in this incident: a series of the errors a
    service answered with (not of the calls it made, `is_client_side`) moved the bad way.
    `this_incident`: the evidence of the incident asked about (rca.rules.timing), degraded."""
    mine = {ev.id for ev in this_incident}
    return frozenset(
        ev.entity
        for ev in evidence
        if ev.id in mine
        and ev.kind is EvidenceKind.METRIC_SHIFT
        and ev.signal is Signal.ERRORS
        and not is_client_side(ev.subject)
    )
