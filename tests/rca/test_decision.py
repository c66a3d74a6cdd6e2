"""The decision reads any hypothesis values into confidences a schema and a person can trust."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from rca.decision import confidences, decide
from rca.hypotheses import Hypothesis, HypothesisId
from rca.model import FaultType

_values = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.floats(min_value=-1e-4, max_value=1e-3)


def _hyps(values: list[float]) -> list[Hypothesis]:
    return [Hypothesis(HypothesisId(f"h-{i}"), f"s{i}", FaultType.CPU, v, (), "") for i, v in enumerate(values)]


@given(st.lists(_values, max_size=12))
def test_confidences_stay_in_the_unit_interval_and_read_top_down(values: list[float]) -> None:
    out = confidences(_hyps(values))
    assert len(out) == len(values)
    assert all(0.0 <= c <= 0.99 and math.isfinite(c) for c in out)
    assert all(a >= b for a, b in zip(out, out[1:], strict=False))


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=8))
def test_a_hypothesis_that_clearly_leads_is_more_confident_than_one_that_ties(values: list[float]) -> None:
    values = sorted(values, reverse=True)
    decision = decide(_hyps(values), symptom="front")
    assert 0.0 <= decision.confidence <= 0.99
    tie = confidences(_hyps([values[0], values[0]]))[0]
    alone = confidences(_hyps([values[0]]))[0]
    assert tie <= alone


def test_two_near_zero_values_that_rank_apart_by_strength_give_no_negative_confidence() -> None:
    """Values that tie to the ranking's precision can come in either order."""
    assert min(confidences(_hyps([0.00041, 0.00049]))) >= 0.0


def test_leaders_the_evidence_scores_the_same_are_named_together() -> None:
    from rca.decision import tied

    level = decide(_hyps([0.4213, 0.4208, 0.2]), symptom="front")  # equal at the ranking's precision
    assert "s0 (cpu) or s1 (cpu)" in level.summary and "equally" in level.summary
    assert [h.service for h in tied(_hyps([0.4213, 0.4208, 0.2]))] == ["s0", "s1"]
    clear = decide(_hyps([0.43, 0.42, 0.2]), symptom="front")
    assert " or " not in clear.summary and clear.summary.startswith("s0 (cpu)")
    assert tied([]) == ()
