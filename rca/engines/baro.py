"""BARO's robust scoring, as its paper describes it (Pham et al., FSE 2024).

Per metric: the median and inter-quartile range of the normal window; the metric's score is
the largest robust z-score `|x - median| / IQR` inside the incident window (a zero IQR scales
by 1, as scikit-learn's RobustScaler does). Entities are ranked by their highest score.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rca.model import Candidate, Cost, Diagnosis, Incident, Modality
from rca.signals import FAULT_OF_SIGNAL, signal_of
from rca.sources.protocols import MetricQuery
from rca.telemetry import Series

_NOISE = 10 * np.finfo(float).eps
_MIN_NORMAL_POINTS = 3


@dataclass(frozen=True, slots=True)
class RobustScore:
    entity: str
    metric: str
    score: float


def robust_score(normal: np.ndarray, anomalous: np.ndarray) -> float:
    """The largest robust z-score of the anomalous values against the normal ones; 0 if none."""
    normal = normal[np.isfinite(normal)]
    anomalous = anomalous[np.isfinite(anomalous)]
    if normal.size == 0 or anomalous.size == 0:
        return 0.0
    q1, median, q3 = np.percentile(normal, [25, 50, 75])
    iqr = q3 - q1
    # RobustScaler treats a scale within float noise of zero as zero, and then scales by 1.
    scale = iqr if iqr > _NOISE * max(1.0, abs(median)) else 1.0
    return float(np.max(np.abs(anomalous - median)) / scale)


def score_series(normal: list[Series], incident: list[Series]) -> list[RobustScore]:
    """A RobustScore per (entity, metric, instance) of the incident.

    Where the normal window holds fewer than three points of a series, the first third of
    the incident window serves as its normal part (the data may start inside the window).
    """
    base = {(s.entity, s.metric, s.instance): s.values for s in normal}
    out = []
    for s in incident:
        ref = base.get((s.entity, s.metric, s.instance))
        values = s.values
        if ref is None or np.isfinite(ref).sum() < _MIN_NORMAL_POINTS:
            cut = max(1, len(values) // 3)
            ref, values = values[:cut], values[cut:]
        out.append(RobustScore(s.entity, s.metric, robust_score(ref, values)))
    return out


class BaroEngine:
    name = "baro"

    async def investigate(self, incident: Incident) -> Diagnosis:
        started = time.perf_counter()
        source = incident.sources.metrics
        normal = incident.normal_for(Modality.METRICS)
        missing = list(incident.missing())
        ranking: tuple[Candidate, ...] = ()
        if source is None:
            missing.append("baro reads metrics only: nothing to rank")
        else:
            now = await source.series(MetricQuery(incident.window))
            ref: list[Series] = []
            if normal is not None and normal.sources.metrics is not None:
                ref = await normal.sources.metrics.series(MetricQuery(normal.window))
            else:
                missing.append("normal metrics: absent, the start of the window serves")
            ranking = _rank(score_series(ref, now))
        cost = Cost(seconds=time.perf_counter() - started)
        return Diagnosis(incident.id, self.name, ranking, tuple(missing), cost)


def _rank(scores: list[RobustScore]) -> tuple[Candidate, ...]:
    best: dict[str, RobustScore] = {}
    for s in scores:
        if s.entity not in best or s.score > best[s.entity].score:
            best[s.entity] = s
    ordered = sorted(best.values(), key=lambda s: (-s.score, s.entity))
    return tuple(
        Candidate(
            service=s.entity,
            score=s.score,
            fault_type=FAULT_OF_SIGNAL[signal_of(s.metric)],
            evidence=(f"{s.metric}: robust z {s.score:.1f}",),
        )
        for s in ordered
    )
