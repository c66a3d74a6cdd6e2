"""How often a first place like this one is right, read from evaluated incidents.

The decision's confidence is a hypothesis value tempered by its lead (rca.decision): it ranks,
but it is no probability (the development sets' first places are right 78-96 % of the time at
confidences of 0.17-0.41). A `Calibration` maps what every ranking has (the first place's
confidence, its lead over the second, and how many modalities were read) to the share of first
places that were right among evaluated incidents with those features: a logistic model fitted
by `rcabot calibrate` on `rcabot eval` results (every development set under every protocol),
shipped with the package in `calibration.json` with what it was fitted on. `likely` is the
least probability at which the first places of those results were right at least 95 % of the
time: what the verdict may call "likely".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

SHIPPED = Path(__file__).with_name("calibration.json")
LIKELY_ACCURACY = 0.95  # "likely" is said where first places were right this often
_RIDGE = 1e-2  # a whisper of shrinkage, so a feature that separates perfectly stays finite


@dataclass(frozen=True, slots=True)
class Features:
    """What a ranking says about its own first place."""

    confidence: float  # the first place's
    margin: float  # its lead over the second, as a share of its confidence (0: they tie)
    modalities: int  # of metrics, logs and traces, how many were read

    def vector(self) -> np.ndarray:
        """What the model weighs: the confidence (on a log scale) and the lead. How many
        modalities were read is kept, not weighed: on three development sets it says which set
        a case is from (the one metrics-only set is the most accurate), not how sure to be."""
        return np.array([1.0, math.log(max(self.confidence, 1e-3)), self.margin])


def features(confidences: Sequence[float], modalities: int) -> Features:
    """The features of a ranking given its confidences, best first."""
    first = confidences[0] if confidences else 0.0
    second = confidences[1] if len(confidences) > 1 else 0.0
    margin = (first - second) / first if first > 0 else 0.0
    return Features(first, max(0.0, min(1.0, margin)), modalities)


def trace_features(trace: Mapping[str, object]) -> Features:
    """The features of a trace's decision (its JSON form)."""
    report = trace.get("decision_report") or {}
    package = trace.get("evidence_package") or {}
    ranking = report.get("ranking", []) if isinstance(report, Mapping) else []
    read = package.get("modalities", {}) if isinstance(package, Mapping) else {}
    return features([float(r["confidence"]) for r in ranking], sum(bool(v) for v in dict(read).values()))


@dataclass(frozen=True, slots=True)
class Calibration:
    weights: tuple[float, ...]
    likely: float  # the least probability said as "likely"
    fitted_on: str = ""  # what it was fitted on: the results and their count

    def probability(self, f: Features) -> float:
        """The share of first places with these features that were right."""
        if f.confidence <= 0:
            return 0.0
        return float(1.0 / (1.0 + math.exp(-float(np.dot(self.weights, f.vector())))))

    def to_json(self) -> dict[str, object]:
        return {"weights": list(self.weights), "likely": self.likely, "fitted_on": self.fitted_on}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Calibration:
        weights = tuple(float(w) for w in data["weights"])  # type: ignore[attr-defined]
        return cls(weights, float(data["likely"]), str(data.get("fitted_on", "")))  # type: ignore[arg-type]


@cache
def shipped() -> Calibration:
    """The calibration shipped with the package."""
    return Calibration.from_json(json.loads(SHIPPED.read_text()))


def fit(rows: Sequence[tuple[Features, bool]], *, fitted_on: str = "") -> Calibration:
    """A logistic model of `right` on the features (Newton's method), and the least
    probability above which first places were right LIKELY_ACCURACY of the time."""
    if not rows:
        raise ValueError("no evaluated first places to fit on")
    x = np.array([f.vector() for f, _ in rows])
    y = np.array([1.0 if right else 0.0 for _, right in rows])
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        step = np.linalg.solve((x.T * (p * (1 - p))) @ x + _RIDGE * np.eye(w.size), x.T @ (p - y) + _RIDGE * w)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    model = Calibration(tuple(float(v) for v in w), 1.0, fitted_on)
    probs = np.array([model.probability(f) for f, _ in rows])
    return Calibration(model.weights, likely_threshold(probs, y), fitted_on)


def likely_threshold(probs: np.ndarray, right: np.ndarray, accuracy: float = LIKELY_ACCURACY) -> float:
    """The least probability p such that first places at p or above were right at least
    `accuracy` of the time (1.0 where no such p exists: nothing is said as likely)."""
    best = 1.0
    for p in sorted(set(probs.tolist()), reverse=True):
        if float(right[probs >= p].mean()) >= accuracy:
            best = p
    return best


def expected_calibration_error(probs: Sequence[float], right: Sequence[bool], bins: int = 10) -> float:
    """The gap between probability and accuracy, averaged over equal-width bins by their share."""
    p, y = np.asarray(probs, dtype=float), np.asarray(right, dtype=float)
    if p.size == 0:
        return 0.0
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).sum()
                     for b in range(bins) if (edges == b).any()) / p.size)  # fmt: skip


def reliability(probs: Sequence[float], right: Sequence[bool], bins: int = 10) -> list[tuple[float, float, int, float, float]]:
    """Per equal-width bin with cases: its bounds, count, mean probability and accuracy."""
    p, y = np.asarray(probs, dtype=float), np.asarray(right, dtype=float)
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return [(b / bins, (b + 1) / bins, int((edges == b).sum()), float(p[edges == b].mean()), float(y[edges == b].mean()))
            for b in range(bins) if (edges == b).any()]  # fmt: skip
