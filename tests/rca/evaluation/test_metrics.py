import pytest

from rca.evaluation.metrics import Outcome, ac_at, avg_at, fault_accuracy, summarise
from rca.model import FaultType


def _o(truth: str, ranked: str, fault: FaultType = FaultType.CPU) -> Outcome:
    return Outcome("e", "d", f"d/{truth}/{ranked}", truth, FaultType.CPU, tuple(ranked), fault, 1.0)


OUTCOMES = [
    _o("a", "abc"),  # rank 1
    _o("b", "abc", FaultType.MEMORY),  # rank 2
    _o("c", "abcde"),  # rank 3
    _o("z", "abcdef"),  # absent
]


def test_ac_at_k_on_a_hand_made_ranking() -> None:
    assert ac_at(OUTCOMES, 1) == 0.25
    assert ac_at(OUTCOMES, 2) == 0.5
    assert ac_at(OUTCOMES, 3) == 0.75
    assert ac_at(OUTCOMES, 5) == 0.75


def test_avg_at_5_is_the_mean_of_ac_1_to_5() -> None:
    assert avg_at(OUTCOMES, 5) == pytest.approx((0.25 + 0.5 + 0.75 + 0.75 + 0.75) / 5)


def test_fault_accuracy_reads_the_top_candidate() -> None:
    assert fault_accuracy(OUTCOMES) == 0.75


def test_empty_is_zero_and_summary_counts() -> None:
    assert ac_at([], 1) == 0.0
    s = summarise("g", "e", OUTCOMES)
    assert (s.cases, s.ac1, s.median_seconds) == (4, 0.25, 1.0)
