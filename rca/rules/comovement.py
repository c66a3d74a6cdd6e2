"""Rule `comovement`: a cause's metrics move with the symptom's."""

from __future__ import annotations

from rca.profiles import comovement, profile_step
from rca.rules.board import Board


def weigh_comovement(values: dict[str, float], board: Board, *, floor: float) -> dict[str, float]:
    """Each service weighed by how closely its most anomalous series follows the symptom's
    anomaly in this incident, where both were measured: one whose series ignore it keeps
    `floor`. A symptom without an anomaly of this incident weighs nothing."""
    profiled = [e for e in board.evidence if e.profile]
    anchor = max(
        (e for e in profiled if e.entity == board.symptom and e.id in board.current),
        key=lambda e: e.score,
        default=None,
    )
    if anchor is None:
        return values
    step = profile_step(profiled)
    out = dict(values)
    for entity in values:
        if entity == board.symptom:
            continue
        corrs = [
            c for e in profiled if e.entity == entity if (c := comovement(e.profile, anchor.profile, step)) is not None
        ]
        if corrs:
            out[entity] *= floor + (1.0 - floor) * max(corrs)
    return out
