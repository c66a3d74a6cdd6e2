"""Rule `raised`: an error a service answered with is one it raised, so the error lines it
wrote while its own answers failed report an exception, whatever their words."""

from __future__ import annotations

from collections.abc import Iterable

from rca.evidence import Evidence, EvidenceKind
from rca.rules.timing import degraded
from rca.signals import Signal, is_client_side


def failing_answers(evidence: Iterable[Evidence]) -> frozenset[str]:
    """The services whose own answers failed: of `evidence` (the incident asked about's, as
    rca.rules.timing places it), a series of the errors a service answered with, not of the
    calls it made (`is_client_side`), moved the bad way."""
    return frozenset(
        ev.entity
        for ev in evidence
        if ev.kind is EvidenceKind.METRIC_SHIFT
        and ev.signal is Signal.ERRORS
        and not is_client_side(ev.subject)
        and degraded(ev)
    )
