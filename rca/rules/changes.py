"""Rule `changes`: a service changed (deployed, configured, flagged, scaled, rolled back,
restarted) before its own anomaly began, where that anomaly began no later than any other
service's, is the first suspect, and its fault is the change; a change with no anomaly after
it, or one made after the incident was under way elsewhere, explains nothing.

A change is a fact with a time, not a deviation: it cannot outweigh the telemetry by size,
only order it. So the rule asks only the order of events, with the clock skew and sampling
forgiven between a cause and its effect (rca.topology.ONSET_TOLERANCE): the change, then the
changed service's anomaly of this incident (rule `timing`'s), and no other's before it. A
change older than the window by more than the window's own length had that long to show and
did not, and is not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rca.changes import Change
from rca.evidence import Evidence, EvidenceId
from rca.rules.board import Board
from rca.telemetry import Window
from rca.topology import ONSET_TOLERANCE, in_causal_order


def changed_first(
    evidence: Sequence[Evidence], current: frozenset[EvidenceId], changes: Iterable[Change], window: Window
) -> dict[str, Change]:
    """The services whose change came before their own anomaly of this incident, where that
    anomaly began no later than any other service's: each with the last such change."""
    began: dict[str, float] = {}
    for ev in evidence:
        if ev.id in current and ev.onset is not None and not ev.under_way:
            began[ev.entity] = min(began.get(ev.entity, ev.onset), ev.onset)
    if not began:
        return {}
    first = min(began.values())
    oldest = window.start - (window.end - window.start)
    out: dict[str, Change] = {}
    for c in sorted(changes, key=lambda c: c.time):
        onset = began.get(c.service)
        if (
            onset is not None
            and c.time >= oldest
            and in_causal_order(c.time, onset)
            and onset <= first + ONSET_TOLERANCE
        ):
            out[c.service] = c  # the last change before the anomaly
    return out


def lift_changed(
    values: dict[str, tuple[float, str]], board: Board
) -> tuple[dict[str, tuple[float, str]], frozenset[str]]:
    """The changed service (the best valued, where several) placed first: its value raised to
    just above the best; returns the values and the services whose fault is the change."""
    found = {
        s: c
        for s, c in changed_first(board.evidence, board.current, board.changes, board.window).items()
        if s in values
    }
    if not found:
        return values, frozenset()
    top = max(found, key=lambda s: (values[s][0], s))
    change = found[top]
    value = values[top][0]
    best = max(v for v, _ in values.values())
    out = dict(values)
    out[top] = (
        value if value >= best else min(1.0, best + 1e-3),
        f"changed ({change.describe()}) before its anomaly began, and before any other service's",
    )
    return out, frozenset({top})
