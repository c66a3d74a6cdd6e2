import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from rca.engines import build_engine
from rca.evaluation.harness import evaluate
from rca.evaluation.metrics import (
    AuditOutcome,
    Outcome,
    ac_at,
    accuracy_at_coverage,
    auroc,
    avg_at,
    coverage,
    fault_accuracy,
    grounded,
    summarise,
)
from rca.model import FaultType
from rca.sources.datasets import find_cases
from rca.topology import ONSET_TOLERANCE


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


def _trace(onsets: list[float | None], step: float = 60.0) -> dict:
    """A trace as engines write it, reduced to what `grounded` reads: one first place citing one
    anomaly per onset (each with a profile sampled every `step`), and an uncited one."""
    evidence = [
        {"id": f"ev-{i}", "onset": t, "profile": [[0.0, 0.1], [step, 0.2], [2 * step, 5.0]]}
        for i, t in enumerate(onsets)
    ]
    evidence.append({"id": "ev-x", "onset": 1e9, "profile": []})
    return {
        "evidence_package": {"evidence": evidence},
        "hypothesis_set": {"hypotheses": [{"id": "h-1", "evidence": [e["id"] for e in evidence[:-1]]}]},
        "decision_report": {"ranking": [{"service": "a", "hypothesis": "h-1"}]},
    }


def test_a_first_place_is_grounded_by_what_began_with_the_fault_not_before_it() -> None:
    start = 10_000.0
    edge = start - ONSET_TOLERANCE - 60.0  # the tolerance and one sampling step of that anomaly
    assert grounded(_trace([edge]), start) is True
    assert grounded(_trace([edge - 1.0]), start) is False
    assert grounded(_trace([edge - 1.0], step=120.0), start) is True  # coarser samples: a wider step
    assert grounded(_trace([start - 3600.0, start + 30.0]), start) is True  # one of its fault's time is enough
    assert grounded(_trace([None, start - 3600.0]), start) is False  # undated evidence grounds nothing
    assert grounded(_trace([None]), start) is None  # nothing dated: cannot say
    assert grounded(None, start) is None and grounded(_trace([start]), None) is None
    for shift in (-1e6, 0.0, 3.5, 1e6):  # the same answer wherever the clock stands
        assert grounded(_trace([edge + shift - 1.0]), start + shift) is False
        assert grounded(_trace([edge + shift]), start + shift) is True


def test_a_right_first_place_counts_grounded_only_when_it_rests_on_the_fault() -> None:
    o = _o("a", "abc")
    assert o.right and not o.right_grounded
    assert replace(o, grounded=True).right_grounded
    assert not replace(_o("b", "abc"), grounded=True).right_grounded  # grounded but wrong


def test_an_evaluation_says_of_each_first_place_whether_it_rests_on_its_fault() -> None:
    lab = Path(__file__).resolve().parents[2] / "data" / "lab-0"
    cases = sorted(find_cases(lab), key=lambda c: c.label.start or 0.0)[:2]
    results = asyncio.run(evaluate([build_engine("lats")], cases, keep_traces=True))
    for case, r in zip(cases, results, strict=True):
        trace = r.diagnosis.trace
        assert trace is not None and case.label.start is not None
        assert r.outcome.grounded == grounded(trace, case.label.start)
        first = next(
            h
            for h in trace["hypothesis_set"]["hypotheses"]
            if h["id"] == trace["decision_report"]["ranking"][0]["hypothesis"]
        )
        onsets = [
            e["onset"] for e in trace["evidence_package"]["evidence"] if e["id"] in first["evidence"] and e["onset"]
        ]
        assert onsets, "a lab fault leaves dated evidence"
        assert grounded(trace, max(onsets)) is True  # asked about the latest of what it cites
        assert grounded(trace, max(onsets) + 3600.0) is False  # asked about a fault begun an hour after all of it


def test_a_summary_counts_grounded_first_places_only_where_the_engine_said() -> None:
    assert summarise("d", "e", OUTCOMES).ac1_grounded is None  # no trace, nothing said
    said = [replace(o, grounded=i % 2 == 0) for i, o in enumerate(OUTCOMES * 2)]
    s = summarise("d", "e", said)
    assert s.ac1_grounded == pytest.approx(sum(o.right_grounded for o in said) / len(said))
    assert s.ac1_grounded is not None and s.ac1_grounded <= s.ac1
