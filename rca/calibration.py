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

A system is not the development sets: its first places may be right more often than they were
there, or less. `Calibration.adapted` shifts the model's log-odds by what the system's own
marked verdicts say (right or wrong, marked by the engineers who acted on them), so the
probability a verdict shows learns the system it serves; without marks it is the shipped one.
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
# How far, a priori, a system's log-odds of a right first place lie from the shipped model's:
# a unit normal, one logit (odds times e) being the size by which the development sets' own
# shifts differ (docs/notes/03-third-round-of-2026-12-03-issue-41-a-probability-that-learns.md); marks move it further only as they add up.
OFFSET_PRIOR_VARIANCE = 1.0
PRIOR_SPREAD = math.sqrt(OFFSET_PRIOR_VARIANCE)
# Gauss-Hermite nodes and weights for the average over a normal shift (probabilists' form).
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(32)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
_MAX_SHIFT = 30.0  # log-odds: past this every probability is 0 or 1 to double precision


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

    def to_json(self) -> dict[str, float]:
        return {"confidence": self.confidence, "margin": self.margin, "modalities": self.modalities}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Features:
        return cls(float(str(data["confidence"])), float(str(data["margin"])), int(str(data["modalities"])))


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
    offset: float = 0.0  # the log-odds shift learnt from a system's marked verdicts
    marks: int = 0  # how many marked verdicts it was learnt from
    spread: float = PRIOR_SPREAD  # how far that shift is known: its standard deviation

    def probability(self, f: Features) -> float:
        """The share of first places with these features that were right, averaged over the
        shifts this system may have from the development sets (`offset`, `spread`)."""
        if f.confidence <= 0:
            return 0.0
        logit = float(np.dot(self.weights, f.vector())) + self.offset + self.spread * _NODES
        return float(np.dot(_WEIGHTS, 1.0 / (1.0 + np.exp(-np.clip(logit, -500.0, 500.0)))))

    def adapted(self, marks: Sequence[tuple[Features, bool]]) -> Calibration:
        """This calibration with its log-odds shifted to a system's marked verdicts (features,
        right?): the shift of most posterior weight under a unit-normal prior
        (OFFSET_PRIOR_VARIANCE), where the posterior's slope is nought, and how far it is known
        (the posterior's curvature there: Laplace's approximation). Unmarked, it is
        unchanged."""
        marks = [(f, right) for f, right in marks if f.confidence > 0]
        if not marks:
            return Calibration(self.weights, self.likely, self.fitted_on)
        base = np.array([float(np.dot(self.weights, f.vector())) for f, _ in marks])
        y = np.array([1.0 if right else 0.0 for _, right in marks])

        def slope(shift: float) -> float:  # of the log posterior: falls as the shift grows
            return float(np.sum(y - 1.0 / (1.0 + np.exp(-(base + shift))))) - shift / OFFSET_PRIOR_VARIANCE

        lo, hi = -_MAX_SHIFT, _MAX_SHIFT
        for _ in range(60):  # bisection: sure where Newton's steps overshoot on a logistic
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
        shift = (lo + hi) / 2
        p = 1.0 / (1.0 + np.exp(-(base + shift)))
        spread = 1.0 / math.sqrt(1.0 / OFFSET_PRIOR_VARIANCE + float(np.sum(p * (1.0 - p))))
        return Calibration(self.weights, self.likely, self.fitted_on, shift, len(marks), spread)

    def to_json(self) -> dict[str, object]:
        return {"weights": list(self.weights), "likely": self.likely, "fitted_on": self.fitted_on}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Calibration:
        """The shipped form: weights, threshold and what they were fitted on (a system's
        shift is learnt where it runs, never shipped)."""
        weights = tuple(float(w) for w in data["weights"])  # type: ignore[attr-defined]
        return cls(weights, float(data["likely"]), str(data.get("fitted_on", "")))  # type: ignore[arg-type]


@cache
def shipped() -> Calibration:
    """The calibration shipped with the package."""
    return Calibration.from_json(json.loads(SHIPPED.read_text()))


def fit(rows: Sequence[tuple[Features, bool]], *, fitted_on: str = "") -> Calibration:
    """A logistic model of `right` on the features (`logistic`), and the least
    probability above which first places were right LIKELY_ACCURACY of the time. On the
    results it was fitted on, no shift is unknown (spread 0); shipped to a system, the prior's
    spread returns (`from_json`)."""
    if not rows:
        raise ValueError("no evaluated first places to fit on")
    y = np.array([1.0 if right else 0.0 for _, right in rows])
    w = logistic(np.array([f.vector() for f, _ in rows]), y)
    model = Calibration(tuple(float(v) for v in w), 1.0, fitted_on, spread=0.0)
    probs = np.array([model.probability(f) for f, _ in rows])
    return Calibration(model.weights, likely_threshold(probs, y), fitted_on, spread=0.0)


def logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The weights of a logistic model of y (0 or 1) on the rows of x (Newton's method, with
    a whisper of ridge so a feature that separates perfectly stays finite)."""
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        step = np.linalg.solve((x.T * (p * (1 - p))) @ x + _RIDGE * np.eye(w.size), x.T @ (p - y) + _RIDGE * w)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return w


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
    return float(
        sum(
            abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).sum()
            for b in range(bins)
            if (edges == b).any()
        )
        / p.size
    )


def reliability(
    probs: Sequence[float], right: Sequence[bool], bins: int = 10
) -> list[tuple[float, float, int, float, float]]:
    """Per equal-width bin with cases: its bounds, count, mean probability and accuracy."""
    p, y = np.asarray(probs, dtype=float), np.asarray(right, dtype=float)
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return [
        (b / bins, (b + 1) / bins, int((edges == b).sum()), float(p[edges == b].mean()), float(y[edges == b].mean()))
        for b in range(bins)
        if (edges == b).any()
    ]
