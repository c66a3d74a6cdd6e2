"""Rule `dominance`: a service whose own resources shifted an order of magnitude more than any
other service's (or than a notable deviation, ONSET_Z, where no other shifted) is the first
suspect, whatever else the rules say. Any other service's: the shift that dominates must be
this incident's, but it is measured against every other shift the window shows, another
incident's too, since a size of shift the same window holds elsewhere is no order of magnitude.

A plain robust score (BARO's) gets such cases right by ranking on the largest deviation; the
rules that weigh propagation and timing must not bury them. Only a service's own resources
count (CPU, memory, disk): latency, errors and traffic also move in its callers, where their
deviation can run far beyond the callee's (lifting a service whose own errors or latency led by
an order of magnitude put callers and proxies first: docs/notes/04-second-round-of-2026-12-03-issue-40-the-floor-where-a-record.md). Only this incident's evidence counts (rule `timing`), not what a restart moved by itself (rule
`changes`), and an anomaly under way
since the first sample of a recording that began inside the window (a new pod, a restarted
exporter, a recording that begins at the fault): time cannot place it (timing.undatable).
"""

from __future__ import annotations

from rca.evidence import EvidenceKind
from rca.evidence.runs import ONSET_Z
from rca.rules.board import Board
from rca.rules.timing import degraded
from rca.signals import Signal, is_host_metric

_OWN = (Signal.CPU, Signal.MEMORY, Signal.DISK)


def own_shift(board: Board, *, incident: bool = True) -> dict[str, float]:
    """Per service, the largest deviation of its own resources in this incident (or, with
    `incident=False`, anywhere in the window)."""
    out: dict[str, float] = {}
    for ev in board.evidence:
        if (
            ev.kind is not EvidenceKind.METRIC_SHIFT
            or ev.signal not in _OWN
            or is_host_metric(ev.subject)
            or (incident and ev.id not in board.current and ev.id not in board.undatable)
            or ev.id in board.restarted  # what a restart moved by itself is no fault (rule `changes`)
            or not degraded(ev)  # less CPU or memory used is no resource fault
        ):
            continue
        out[ev.entity] = max(out.get(ev.entity, 0.0), ev.score)
    return out


def lift_dominant(values: dict[str, tuple[float, str]], board: Board, *, factor: float) -> dict[str, tuple[float, str]]:
    """The dominant service (its own shift at least `factor` times any other's), if one,
    placed first: its value raised to just above the best."""
    shifts = own_shift(board)
    if not shifts:
        return values
    top, z = sorted(shifts.items(), key=lambda kv: -kv[1])[0]
    # against every other service's shift the window shows, this incident's or not: a level of
    # shift seen elsewhere in the same window is no order of magnitude
    second = max((s for e, s in own_shift(board, incident=False).items() if e != top), default=0.0)
    if top not in values or z < factor * max(second, ONSET_Z):
        return values
    best = max(v for v, _ in values.values())
    value, why = values[top]
    if value >= best:
        return values
    out = dict(values)
    out[top] = (
        min(1.0, best + 1e-3),
        f"its own resources shifted {z / max(second, ONSET_Z):.0f}x more than any other service's",
    )
    return out
