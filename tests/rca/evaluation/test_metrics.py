import pytest

from rca.evaluation.metrics import (
    AuditOutcome,
    Outcome,
    ac_at,
    accuracy_at_coverage,
    auroc,
    avg_at,
    coverage,
    fault_accuracy,
    summarise,
)
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


def _audited(right: bool, score: float, route: str = "accept", support: float = 1.0) -> Outcome:
    return Outcome(
        "lats",
        "d",
        "c",
        "a",
        FaultType.CPU,
        ("a",) if right else ("b", "a"),
        FaultType.CPU,
        0.1,
        audit=AuditOutcome(score, route, None, support),
    )


def test_auroc_is_one_when_every_wrong_answer_scores_below_every_right_one_and_half_for_ties() -> None:
    perfect = [_audited(True, 0.9), _audited(True, 0.8), _audited(False, 0.5), _audited(False, 0.7)]
    assert auroc(perfect) == 1.0
    assert auroc([_audited(True, 0.5), _audited(False, 0.5)]) == 0.5
    backwards = [_audited(True, 0.1), _audited(False, 0.9)]
    assert auroc(backwards) == 0.0
    assert auroc([_audited(True, 0.9)]) is None  # nothing wrong to predict
    # it is a ranking statistic: any increasing transform of the scores leaves it unchanged
    squashed = [_audited(o.right, o.audit.score**3) for o in perfect]  # type: ignore[union-attr]
    assert auroc(squashed) == auroc(perfect)


def test_coverage_splits_accuracy_by_what_the_audit_accepts() -> None:
    outs = [
        _audited(True, 0.9),
        _audited(True, 0.9),
        _audited(False, 0.4, "slow_localise"),
        _audited(True, 0.6, "fast_patch"),
    ]
    c = coverage("d", "lats", outs)
    assert c is not None and c.accepted == 0.5 and c.ac1_accepted == 1.0 and c.ac1_flagged == 0.5 and c.ac1 == 0.75
    unaudited = Outcome("baro", "d", "c", "a", FaultType.CPU, ("a",), FaultType.CPU, 0.1)
    assert coverage("d", "baro", [unaudited]) is None


def test_trust_is_form_times_support_and_coverage_keeps_the_most_trusted_first() -> None:
    # the form score cannot tell these apart; the support the telemetry gives can
    outs = [
        _audited(True, 0.95, support=0.6),
        _audited(True, 0.95, support=0.5),
        _audited(False, 0.95, support=0.1),
        _audited(False, 0.95, support=0.2),
    ]
    assert auroc(outs) == 1.0
    c = coverage("d", "lats", outs)
    assert c is not None and c.auroc_form == 0.5 and c.auroc == 1.0
    assert dict(c.at_coverage)[0.5] == 1.0 and dict(c.at_coverage)[0.75] == 2 / 3
    assert accuracy_at_coverage(outs, 1.0) == 0.5
