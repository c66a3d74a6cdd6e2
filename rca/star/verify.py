"""Running a trace's verification tests against the telemetry, and re-ranking by them.

Each test re-runs its query through the same read-only tools the search used and looks at
its subject (the metric, log template or call). The hypothesis the test was written for is
confirmed when the subject is still anomalous (a deviation of at least 3) and contradicted
when it is back to normal; the other hypotheses it separates, which expect it normal there,
gain or lose a little the other way.
"""

from __future__ import annotations

from dataclasses import dataclass

from rca.evidence.reading import ToolResult
from rca.evidence.toolbox import Toolbox
from rca.hypotheses import Hypothesis, HypothesisId
from rca.trace import Trace, VerificationTest

ANOMALOUS_AT = 3.0
# factors on a hypothesis' value: (its own test confirmed, contradicted), (another's, ...)
OWN = (1.25, 0.5)
OTHER = (1.05, 0.9)


@dataclass(frozen=True, slots=True)
class TestOutcome:
    test: VerificationTest
    observed: str  # anomalous | normal | no data
    score: float  # the strongest deviation the query returned
    detail: str

    def verdict_for(self, hypothesis: str) -> str:
        """confirmed | contradicted | untested, for one hypothesis."""
        expected = dict(self.test.expected).get(HypothesisId(hypothesis))
        if expected is None or self.observed == "no data":
            return "untested"
        return "confirmed" if expected == self.observed else "contradicted"


@dataclass(frozen=True, slots=True)
class VerificationRun:
    outcomes: tuple[TestOutcome, ...]
    before: tuple[Hypothesis, ...]
    after: tuple[Hypothesis, ...]  # re-ranked

    def to_json(self) -> dict[str, object]:
        return {
            "tests": [
                {
                    "id": o.test.id,
                    "tool": o.test.tool,
                    "target": o.test.target,
                    "query": o.test.query,
                    "expected": dict(o.test.expected),
                    "observed": o.observed,
                    "score": round(o.score, 3),
                    "detail": o.detail,
                }
                for o in self.outcomes
            ],
            "ranking_before": [h.service for h in self.before],
            "ranking_after": [
                {"service": h.service, "fault_type": h.fault_type.value, "value": h.value} for h in self.after
            ],
        }


async def run_tests(trace: Trace, toolbox: Toolbox) -> VerificationRun:
    """Execute every test of the decision report and re-rank the hypotheses."""
    outcomes = tuple([await _run(test, toolbox) for test in trace.decision.tests])
    return VerificationRun(outcomes, trace.hypotheses, rerank(trace.hypotheses, outcomes))


async def _run(test: VerificationTest, toolbox: Toolbox) -> TestOutcome:
    tools = {"metrics": toolbox.metrics, "logs": toolbox.logs, "spans": toolbox.spans}
    result: ToolResult = await tools[test.tool](test.target)
    if result.status == "unavailable":
        return TestOutcome(test, "no data", 0.0, f"{test.tool} cannot be read for this incident")
    same = [ev for ev in result.evidence if ev.subject == test.subject]
    strongest = max(same, key=lambda ev: ev.score, default=None)
    if strongest is None or strongest.score < ANOMALOUS_AT:
        return TestOutcome(
            test,
            "normal",
            strongest.score if strongest else 0.0,
            f"{test.subject[:80]} of {test.target} is within its normal range",
        )
    return TestOutcome(test, "anomalous", strongest.score, strongest.detail)


def rerank(hypotheses: tuple[Hypothesis, ...], outcomes: tuple[TestOutcome, ...]) -> tuple[Hypothesis, ...]:
    """Hypotheses re-valued by the tests' verdicts, best first."""
    out = []
    for h in hypotheses:
        value = h.value
        for o in outcomes:
            verdict = o.verdict_for(h.id)
            confirm, contradict = OWN if o.test.hypothesis == h.id else OTHER
            value *= confirm if verdict == "confirmed" else contradict if verdict == "contradicted" else 1.0
        out.append((min(1.0, round(value, 4)), h))
    ordered = sorted(out, key=lambda vh: -vh[0])
    return tuple(Hypothesis(h.id, h.service, h.fault_type, v, h.evidence, h.rationale) for v, h in ordered)
