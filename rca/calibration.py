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
there, or less. The fit says how much: each evaluated system (a set saved under results/) has
its own shift of the log-odds, drawn from a normal whose spread the fit estimates with the
weights (a logistic model with a random intercept per system), so the probability shown to a
system never marked is the average over that spread. `Calibration.adapted` learns the
system's own shift from its marked verdicts (right or wrong, marked by the engineers who
acted on them), under that spread as its prior, so the probability a verdict shows learns the
system it serves; without marks it is the shipped one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

SHIPPED = Path(__file__).with_name("calibration.json")
LIKELY_ACCURACY = 0.95  # "likely" is said where first places were right this often
_RIDGE = 1e-2  # a whisper of shrinkage, so a feature that separates perfectly stays finite
# How far a system's log-odds of a right first place lie from the shipped model's, where the
# fit cannot tell (it saw fewer than two systems): one logit (odds times e), the size by which
# the first three development sets' shifts differed
# (docs/notes/03-third-round-of-2026-12-03-issue-41-a-probability-that-learns.md).
PRIOR_SPREAD = 1.0
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


def case_features(case: Mapping[str, object]) -> Features:
    """The features of a case saved by `rcabot eval --json`: its ranking's scores and the
    modalities it read."""
    ranking = case.get("ranking") or []
    read = case.get("modalities") or {}
    if not isinstance(ranking, list) or not isinstance(read, Mapping):
        raise TypeError("a saved case's ranking is a list and its modalities a mapping")
    return features([float(c["score"]) for c in ranking], sum(bool(v) for v in read.values()))


@dataclass(frozen=True, slots=True)
class Calibration:
    weights: tuple[float, ...]
    likely: float  # the least probability said as "likely"
    fitted_on: str = ""  # what it was fitted on: the results and their count
    offset: float = 0.0  # the log-odds shift learnt from a system's marked verdicts
    marks: int = 0  # how many marked verdicts it was learnt from
    spread: float = PRIOR_SPREAD  # how far that shift is known: its standard deviation
    between: float = PRIOR_SPREAD  # how far systems' shifts lie apart (fitted): the prior's spread

    def probability(self, f: Features) -> float:
        """The share of first places with these features that were right, averaged over the
        shifts this system may have from the development sets (`offset`, `spread`)."""
        if f.confidence <= 0:
            return 0.0
        logit = float(np.dot(self.weights, f.vector())) + self.offset + self.spread * _NODES
        return float(np.dot(_WEIGHTS, 1.0 / (1.0 + np.exp(-np.clip(logit, -500.0, 500.0)))))

    def says_likely(self, f: Features, tied: int) -> bool:
        """Whether a first place with these features may be called likely: no tie at the top
        (`tied`: how many share it), and a probability of at least `likely`."""
        return tied <= 1 and self.probability(f) >= self.likely

    def adapted(self, marks: Sequence[tuple[Features, bool]]) -> Calibration:
        """This calibration with its log-odds shifted to a system's marked verdicts (features,
        right?): the shift of most posterior weight under a normal prior of the spread
        between systems (`between`), where the posterior's slope is nought, and how far it is
        known (the posterior's curvature there: Laplace's approximation). Unmarked, it is
        the shipped one."""
        marks = [(f, right) for f, right in marks if f.confidence > 0]
        prior = self.between**2
        if not marks:
            return Calibration(self.weights, self.likely, self.fitted_on, spread=self.between, between=self.between)
        base = np.array([float(np.dot(self.weights, f.vector())) for f, _ in marks])
        y = np.array([1.0 if right else 0.0 for _, right in marks])

        def slope(shift: float) -> float:  # of the log posterior: falls as the shift grows
            return float(np.sum(y - 1.0 / (1.0 + np.exp(-(base + shift))))) - shift / prior

        lo, hi = -_MAX_SHIFT, _MAX_SHIFT
        for _ in range(60):  # bisection: sure where Newton's steps overshoot on a logistic
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
        shift = (lo + hi) / 2
        p = 1.0 / (1.0 + np.exp(-(base + shift)))
        spread = 1.0 / math.sqrt(1.0 / prior + float(np.sum(p * (1.0 - p))))
        return Calibration(self.weights, self.likely, self.fitted_on, shift, len(marks), spread, self.between)

    def to_json(self) -> dict[str, object]:
        return {
            "weights": list(self.weights),
            "likely": self.likely,
            "between": self.between,
            "fitted_on": self.fitted_on,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Calibration:
        """The shipped form: weights, threshold, the spread between systems and what they
        were fitted on (a system's own shift is learnt where it runs, never shipped)."""
        weights = tuple(float(w) for w in data["weights"])  # type: ignore[attr-defined]
        between = float(data.get("between", PRIOR_SPREAD))  # type: ignore[arg-type]
        return cls(weights, float(data["likely"]), str(data.get("fitted_on", "")), spread=between, between=between)  # type: ignore[arg-type]


@cache
def shipped() -> Calibration:
    """The calibration shipped with the package."""
    return Calibration.from_json(json.loads(SHIPPED.read_text()))


def fit(rows: Sequence[tuple[str, Features, bool]], *, fitted_on: str = "") -> Calibration:
    """From (system, features, right?) rows: a logistic model of `right` on the features with
    a shift of the log-odds per system (`mixed_logistic`; with one system the spread between
    systems cannot be told and is PRIOR_SPREAD), and the least probability at which first
    places were right LIKELY_ACCURACY of the time. Probabilities are the shipped ones, averaged
    over the spread between systems, as a system never marked is shown them."""
    if not rows:
        raise ValueError("no evaluated first places to fit on")
    index = {system: i for i, system in enumerate(sorted({system for system, _, _ in rows}))}
    x = np.array([f.vector() for _, f, _ in rows])
    y = np.array([1.0 if right else 0.0 for _, _, right in rows])
    if len(index) < 2:
        w, between = logistic(x, y), PRIOR_SPREAD
    else:
        w, between = mixed_logistic(x, y, np.array([index[system] for system, _, _ in rows]))
    model = Calibration(tuple(float(v) for v in w), 1.0, fitted_on, spread=between, between=between)
    probs = np.array([model.probability(f) for _, f, _ in rows])
    return replace(model, likely=likely_threshold(probs, y))


def apart(rows: Sequence[tuple[str, Features, bool]]) -> dict[str, Calibration]:
    """Per system of (system, features, right?) rows, the calibration fitted on the other
    systems only: what a system never evaluated would be shown."""
    names = sorted({system for system, _, _ in rows})
    return {name: fit([r for r in rows if r[0] != name]) for name in names if len(names) > 1}


def mixed_logistic(x: np.ndarray, y: np.ndarray, system: np.ndarray) -> tuple[np.ndarray, float]:
    """The weights of a logistic model of y on the rows of x with a normal shift of the
    log-odds per system (`system`: each row's index), and the spread of those shifts (their
    standard deviation): expectation-maximisation under Laplace's approximation, each round
    fitting the weights and shifts at the present spread (Newton's method, the shifts shrunk
    by it) and then setting the spread's square to the shifts' mean square plus how far each
    is known."""
    d, g = x.shape[1], int(system.max()) + 1
    member = np.zeros((x.shape[0], g))
    member[np.arange(x.shape[0]), system] = 1.0
    z = np.hstack([x, member])
    theta, variance = np.zeros(d + g), PRIOR_SPREAD**2
    for _ in range(200):
        penalty = np.concatenate([np.full(d, _RIDGE), np.full(g, 1.0 / variance)])
        theta, hessian = _newton(z, y, penalty, theta)
        shifts, known = theta[d:], np.diag(np.linalg.inv(hessian))[d:]
        updated = max(float(np.mean(shifts**2 + known)), 1e-6)
        if abs(updated - variance) < 1e-8:
            break
        variance = updated
    return theta[:d], math.sqrt(variance)


def logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The weights of a logistic model of y (0 or 1) on the rows of x (Newton's method, with
    a whisper of ridge so a feature that separates perfectly stays finite)."""
    return _newton(x, y, np.full(x.shape[1], _RIDGE), np.zeros(x.shape[1]))[0]


def _newton(x: np.ndarray, y: np.ndarray, penalty: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weights of most penalised likelihood of a logistic model of y on the rows of x, each
    weight shrunk by its `penalty` (a normal prior of that precision), by Newton's method from
    `start`; and the penalised likelihood's curvature there (how far each weight is known)."""
    w = start.copy()
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        hessian = (x.T * (p * (1 - p))) @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, x.T @ (p - y) + penalty * w)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return w, hessian


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
