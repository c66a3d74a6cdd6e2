"""Rule `changes`: a service changed (deployed, configured, flagged, scaled, rolled back,
restarted) in the interval its own anomaly began in, where that anomaly began no later than any
other service's and nothing else the evidence shows explains it, is the first suspect, and its
fault is the change; a change with no anomaly right after it, one made after the incident was
under way elsewhere, or one to a service whose anomaly an anomalous neighbour explains,
explains nothing.

A change is a fact with a time, not a deviation: it cannot outweigh the telemetry by size,
only order it. So the rule asks only the order of events: the change, then the changed
service's anomaly of this incident (rule `timing`'s) beginning at the next sample, no other's
before it. "The interval it began in" is the one between the anomaly's first sample and the
sample before it, the series' own step, with the clock skew and sampling forgiven between a
cause and its effect (rca.topology.ONSET_TOLERANCE): a change long before had time to show and
did not, so something else began the anomaly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rca.changes import Change
from rca.evidence import Evidence, EvidenceId
from rca.rules.board import Board
from rca.topology import ONSET_TOLERANCE


def changed_first(
    evidence: Sequence[Evidence], current: frozenset[EvidenceId], changes: Iterable[Change]
) -> dict[str, Change]:
    """The services changed in the interval their own anomaly of this incident began in, where
    that anomaly began no later than any other service's: each with the last such change."""
    placed: dict[str, list[Evidence]] = {}
    for ev in evidence:
        if ev.id in current and ev.onset is not None and not ev.under_way:
            placed.setdefault(ev.entity, []).append(ev)
    if not placed:
        return {}
    began: dict[str, tuple[float, float]] = {}  # per entity, its onset and the step before it
    for entity, found in placed.items():
        onset = min(ev.onset for ev in found if ev.onset is not None)
        began[entity] = (onset, max(_step(ev) for ev in found if ev.onset == onset))
    first = min(onset for onset, _ in began.values())
    out: dict[str, Change] = {}
    for c in sorted(changes, key=lambda c: c.time):
        if c.service not in began:
            continue
        onset, step = began[c.service]
        if onset <= first + ONSET_TOLERANCE and onset - step - ONSET_TOLERANCE <= c.time <= onset + ONSET_TOLERANCE:
            out[c.service] = c  # the last change in that interval
    return out


def _step(ev: Evidence) -> float:
    """The sampling step of the series the evidence read (0 where it shows none)."""
    times = sorted(t for t, _ in ev.profile)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    return min(gaps, default=0.0)


def lift_changed(
    values: dict[str, tuple[float, str]], board: Board, explained: frozenset[str]
) -> tuple[dict[str, tuple[float, str]], frozenset[str]]:
    """The changed service (the best valued, where several) placed first, unless an anomalous
    neighbour explains its anomaly (`explained`, rules `victims` and `answers`): its value
    raised to just above the best; returns the values and the services whose fault is the
    change."""
    found = {
        s: c
        for s, c in changed_first(board.evidence, board.current, board.changes).items()
        if s in values and s not in explained
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
        f"changed ({change.describe()}) as its anomaly began, before any other service's",
    )
    return out, frozenset({top})
