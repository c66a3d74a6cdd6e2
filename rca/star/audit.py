"""The STAR audit: every stage's criteria, the trace score S, diagnostics and the route.

S = sum(w_k s_k) / sum(w_k). A stage's severity is the weighted shortfall of its criteria;
the blamed stage is the most severe one. Route: S >= tau accept; tau - epsilon <= S < tau fast
path; below, slow path.

Beside S, which judges how a trace is made, `support` says how far the telemetry itself backs
its answer (rca.star.support), and `trust` = S x support is what predicts a wrong answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rca.star import analysis, hypotheses, package, report, support
from rca.star.criteria import AuditContext, Criterion
from rca.trace import STAGES, Trace


class Route(StrEnum):
    ACCEPT = "accept"
    FAST = "fast_path"
    SLOW = "slow_path"


@dataclass(frozen=True, slots=True)
class StarConfig:
    tau: float = 0.8
    epsilon: float = 0.1


@dataclass(frozen=True, slots=True)
class StageDiagnostic:
    stage: str
    score: float
    severity: float
    violations: tuple[Criterion, ...]


@dataclass(frozen=True, slots=True)
class Audit:
    score: float
    route: Route
    stages: tuple[StageDiagnostic, ...]
    criteria: tuple[Criterion, ...]
    support: float = 1.0  # how far the telemetry backs the answer (rca.star.support)

    @property
    def trust(self) -> float:
        """How far to trust the verdict: a well-made trace whose telemetry backs it."""
        return round(self.score * self.support, 4)

    @property
    def blamed(self) -> StageDiagnostic | None:
        """The most severe stage with a violation; None for a clean trace."""
        worst = max(self.stages, key=lambda d: (d.severity, -STAGES.index(d.stage)))
        return worst if worst.violations else None

    def to_json(self) -> dict[str, object]:
        blamed = self.blamed
        return {
            "score": round(self.score, 4),
            "support": self.support,
            "trust": self.trust,
            "route": self.route.value,
            "blamed_stage": blamed.stage if blamed else None,
            "stages": [
                {
                    "stage": d.stage,
                    "score": round(d.score, 4),
                    "severity": round(d.severity, 4),
                    "violations": [
                        {
                            "criterion": c.name,
                            "score": round(c.score, 4),
                            "explanation": c.explanation,
                            "blamed": list(c.blamed),
                        }
                        for c in d.violations
                    ],
                }
                for d in self.stages
            ],
            "criteria": [
                {
                    "stage": c.stage,
                    "criterion": c.name,
                    "score": c.score,
                    "weight": c.weight,
                    "explanation": c.explanation,
                    "blamed": list(c.blamed),
                    "necessary": c.necessary,
                }
                for c in self.criteria
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Audit:
        """An audit read back from `to_json`: its criteria whole, the scores recomputed from them
        as `audit` computes them. KeyError where `data` is not a whole one (an audit stored
        before it kept every criterion)."""
        criteria = tuple(
            Criterion(
                c["stage"],
                c["criterion"],
                float(c["score"]),
                float(c["weight"]),
                c["explanation"],
                tuple(c["blamed"]),
                bool(c["necessary"]),
            )
            for c in data["criteria"]
        )
        score, stages = _scored(criteria)
        return cls(score, Route(data["route"]), stages, criteria, float(data["support"]))


_CHECKS = (package.check, hypotheses.check, analysis.check, report.check, support.check)


def audit(trace: Trace, ctx: AuditContext, config: StarConfig = StarConfig()) -> Audit:
    """Audit a trace against the call graph and the telemetry it could read."""
    criteria = tuple(c for check in _CHECKS for c in check(trace, ctx))
    score, stages = _scored(criteria)
    named = {c.name: c for c in criteria}
    way = route(score, config)
    if way is Route.ACCEPT and any(c.unmet for c in criteria):
        way = Route.FAST  # a requirement no average makes up for: repair it
    backing = support.support(trace, named["independent_lead"], named["leads_examined"], named["seen_at_source"])
    return Audit(score, way, stages, criteria, backing)


def _scored(criteria: tuple[Criterion, ...]) -> tuple[float, tuple[StageDiagnostic, ...]]:
    """S over every criterion, and each stage's score, severity and violations."""
    total = sum(c.weight for c in criteria)
    score = sum(c.weight * c.score for c in criteria) / total if total else 0.0
    stages = []
    for stage in STAGES:
        mine = [c for c in criteria if c.stage == stage]
        weight = sum(c.weight for c in mine)
        stage_score = sum(c.weight * c.score for c in mine) / weight if weight else 1.0
        stages.append(StageDiagnostic(stage, stage_score, 1.0 - stage_score, tuple(c for c in mine if c.violated)))
    return score, tuple(stages)


def route(score: float, config: StarConfig) -> Route:
    if score >= round(config.tau, 9):
        return Route.ACCEPT
    if score >= round(config.tau - config.epsilon, 9):
        return Route.FAST
    return Route.SLOW
