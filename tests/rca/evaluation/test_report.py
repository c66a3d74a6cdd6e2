"""The evaluation's calibration figures: what a system that marks its verdicts would see, and
what sampling alone costs an ECE on a few dozen cases."""

from __future__ import annotations

import random

import pytest

from rca.calibration import expected_calibration_error, shipped
from rca.evaluation.harness import CaseResult
from rca.evaluation.metrics import Outcome
from rca.evaluation.report import (
    ece_floor,
    learnt,
    probability,
    render_calibration,
    said_likely,
    taught,
    to_json,
)
from rca.model import Candidate, CaseId, Diagnosis, FaultType


def _result(i: int, right: bool, *, dataset: str = "set", confidence: float = 0.3) -> CaseResult:
    ranking = (Candidate("a", confidence, FaultType.CPU), Candidate("b", confidence / 2, FaultType.CPU))
    truth = "a" if right else "b"
    outcome = Outcome("lats", dataset, f"c{i}", truth, FaultType.CPU, ("a", "b"), FaultType.CPU, 0.1)
    return CaseResult.of(None, Diagnosis(CaseId(f"c{i}"), "lats", ranking), outcome)


def test_a_case_learns_only_from_the_cases_before_it_of_its_own_dataset() -> None:
    results = [_result(i, right=False) for i in range(30)]
    taught = learnt(results)
    assert taught[0] == pytest.approx(probability(results[0]))  # nothing marked yet: as shipped
    assert taught[-1] < taught[10] < taught[0]  # wrong, again and again: it learns to doubt
    flipped = [*results[:-1], _result(29, right=True)]
    assert learnt(flipped)[-1] == pytest.approx(taught[-1])  # its own outcome never enters
    other = [_result(i, right=False, dataset="other") for i in range(30)]
    mixed = learnt([*other, *results])
    assert mixed[30] == pytest.approx(probability(results[0]))  # another dataset teaches nothing


def test_learning_from_marks_brings_a_miscalibrated_system_near_its_accuracy() -> None:
    rng = random.Random(5)
    shipped_p = probability(_result(0, True))
    results = [_result(i, right=rng.random() < 0.35) for i in range(200)]  # far below what was shipped
    right = [r.outcome.right for r in results]
    taught = learnt(results)
    assert expected_calibration_error(taught, right) < expected_calibration_error([shipped_p] * 200, right) / 2
    assert "ECE learnt" in render_calibration(results)


def test_the_floor_is_what_a_perfect_calibration_scores_on_so_few_cases() -> None:
    probs = [0.2, 0.5, 0.8, 0.9] * 12
    floor = ece_floor(probs)
    assert 0.03 < floor < 0.2  # 48 cases: sampling alone
    assert ece_floor(probs * 50) < floor / 3  # it shrinks with the count, as sampling error does
    assert ece_floor(probs) == floor  # seeded: the same figure every run
    assert shipped().likely > 0


def test_likely_is_said_as_the_bot_says_it_held_back_on_a_new_system_and_earned_by_its_marks() -> None:
    clear = [_result(i, right=True, confidence=0.5) for i in range(60)]  # the second far behind
    cals = taught(clear)
    said = [said_likely(r, c) for r, c in zip(clear, cals, strict=True)]
    assert not said[0] and said[-1]  # not before anything is marked; after a record of right ones
    cases = to_json(clear)["cases"]
    assert [c["likely_learnt"] for c in cases] == said and not any(c["likely"] for c in cases)
    tie = CaseResult.of(
        None,
        Diagnosis(CaseId("t"), "lats", (Candidate("a", 0.9, FaultType.CPU), Candidate("b", 0.9, FaultType.CPU))),
        clear[0].outcome,
    )
    assert not said_likely(tie, cals[-1])  # a tie at the top is never likely, whatever the record
