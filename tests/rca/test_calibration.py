"""The first place's probability: fitted from outcomes, monotone in what should raise it,
honest about what it cannot tell, and shipped with the package."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rca.calibration import (
    Calibration,
    Features,
    apart,
    expected_calibration_error,
    features,
    fit,
    likely_threshold,
    mixed_logistic,
    reliability,
    shipped,
)


def _rows(n: int = 2000, seed: int = 1) -> list[tuple[str, Features, bool]]:
    """Outcomes of one system drawn so that a clearer lead is right more often."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        conf, margin = rng.uniform(0.02, 0.9), rng.uniform(0.0, 1.0)
        out.append(("one", Features(conf, margin, 3), rng.random() < 0.3 + 0.6 * margin))
    return out


def _systems(spread: float, systems: int = 40, n: int = 150, seed: int = 2) -> list[tuple[str, Features, bool]]:
    """Outcomes of many systems, each with its own shift of the log-odds drawn from a normal of
    standard deviation `spread`, over one model: log-odds -0.5 + 2 x lead."""
    rng = random.Random(seed)
    out = []
    for s in range(systems):
        shift = rng.gauss(0.0, spread)
        for _ in range(n):
            f = Features(rng.uniform(0.05, 0.9), rng.uniform(0.0, 1.0), 3)
            out.append((f"s{s}", f, rng.random() < 1.0 / (1.0 + math.exp(-(-0.5 + 2.0 * f.margin + shift)))))
    return out


def test_a_fit_is_calibrated_on_what_it_was_fitted_on_and_rises_with_the_lead() -> None:
    rows = _rows()
    cal = replace(fit(rows), spread=0.0)  # on the one system it was fitted on, its shift is known
    probs = [cal.probability(f) for _, f, _ in rows]
    assert expected_calibration_error(probs, [ok for _, _, ok in rows]) < 0.05
    assert cal.probability(Features(0.3, 0.9, 3)) > cal.probability(Features(0.3, 0.1, 3))
    assert cal.probability(Features(0.0, 0.0, 3)) == 0.0  # nothing ranked: nothing likely


def test_likely_is_the_least_probability_whose_first_places_were_right_95_percent() -> None:
    probs = np.array([0.2, 0.5, 0.8, 0.9, 0.95, 0.99])
    right = np.array([0, 1, 0, 1, 1, 1], dtype=float)
    assert likely_threshold(probs, right) == 0.9
    assert likely_threshold(probs, np.zeros(6)) == 1.0  # never right: nothing is likely


def test_ece_and_reliability_on_known_numbers() -> None:
    assert expected_calibration_error([0.9, 0.9, 0.1, 0.1], [True, True, False, False]) == pytest.approx(0.1)
    bins = reliability([0.05, 0.95, 0.95], [False, True, False])
    assert [(n, round(acc, 2)) for _, _, n, _, acc in bins] == [(1, 0.0), (2, 0.5)]


def test_features_read_a_ranking_and_a_tie_leads_by_nothing() -> None:
    assert features([0.4, 0.4, 0.1], 3).margin == 0.0
    assert features([0.4, 0.1], 2).margin == pytest.approx(0.75)
    assert features([], 1).confidence == 0.0


def test_the_shipped_calibration_loads_and_round_trips() -> None:
    cal = shipped()
    assert 0.0 < cal.likely <= 1.0 and cal.fitted_on
    assert Calibration.from_json(json.loads(json.dumps(cal.to_json()))) == cal


def test_rcabot_calibrate_fits_eval_results_and_refuses_what_is_not_one(tmp_path: Path) -> None:
    from bot.cli import main

    cases = [
        {
            "engine": "lats",
            "dataset": "set",
            "case_id": f"c{i}",
            "error": None,
            "truth": {"service": "a", "fault_type": "cpu"},
            "modalities": {"metrics": True},
            "ranking": [
                {"service": "a" if i % 3 else "b", "score": 0.1 + i / 100, "fault_type": "cpu"},
                {"service": "b", "score": 0.05, "fault_type": "cpu"},
            ],
        }
        for i in range(60)
    ]
    results = tmp_path / "eval.json"
    results.write_text(json.dumps({"version": 4, "protocol": "realistic", "cases": cases}))
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(results), "--out", str(out)]) == 0
    written = Calibration.from_json(json.loads(out.read_text()))
    assert "60 first places of lats" in written.fitted_on
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2]")
    assert main(["calibrate", str(junk)]) == 2


def test_marks_teach_a_system_its_own_odds_and_the_prior_holds_a_few_marks_back() -> None:
    cal = shipped()
    f = Features(0.3, 0.5, 3)
    assert cal.adapted([]).probability(f) == pytest.approx(cal.probability(f))
    wrong = [(Features(0.3 + i / 100, 0.5, 3), False) for i in range(20)]
    right = [(Features(0.3 + i / 100, 0.5, 3), True) for i in range(20)]
    assert cal.adapted(wrong).probability(f) < cal.probability(f) < cal.adapted(right).probability(f)
    assert cal.adapted(wrong).marks == 20 and cal.adapted(right).likely == cal.likely
    one = cal.adapted(wrong[:1])
    assert abs(one.offset) < 1.0  # one mark is no licence to move a unit logit
    assert abs(cal.adapted(wrong).offset) > abs(cal.adapted(wrong[:5]).offset) > abs(one.offset)
    # the order marks came in does not matter, nor do rankings with nothing in them
    mixed = wrong[:7] + right[:13]
    assert cal.adapted(mixed).offset == pytest.approx(cal.adapted(list(reversed(mixed))).offset)
    assert cal.adapted([*mixed, (Features(0.0, 0.0, 3), True)]).offset == pytest.approx(cal.adapted(mixed).offset)


def test_marks_at_the_rate_the_model_expects_leave_it_nearly_where_it_was() -> None:
    """A system whose first places are right as often as the shipped model says learns no shift."""
    cal = shipped()
    rng = random.Random(3)
    feats = [Features(rng.uniform(0.05, 0.7), rng.uniform(0.0, 1.0), 3) for _ in range(4000)]
    like_the_sets = replace(cal, spread=0.0)  # a system exactly like the sets it was fitted on
    marks = [(f, rng.random() < like_the_sets.probability(f)) for f in feats]
    assert abs(cal.adapted(marks).offset) < 0.15


def test_features_round_trip_as_stored() -> None:
    f = features([0.4, 0.1], 2)
    assert Features.from_json(json.loads(json.dumps(f.to_json()))) == f


def test_a_system_never_marked_is_as_unsure_as_the_sets_differ_and_marks_sharpen_it() -> None:
    cal = shipped()
    clear = Features(0.35, 0.8, 3)  # a clear first place
    known = replace(cal, spread=0.0)  # a system whose shift is known to be the sets' average
    assert 0.5 < cal.probability(clear) < known.probability(clear)  # less sure on a new system
    assert cal.probability(clear) < cal.likely  # and not said as likely there
    assert cal.probability(Features(0.0, 0.0, 3)) == 0.0
    right = cal.adapted([(clear, True)] * 200)
    assert right.marks == 200 and right.spread < cal.spread  # marks narrow what is known
    assert right.probability(clear) >= cal.likely  # a long record of right first places earns it
    wrong = cal.adapted([(clear, False)] * 200)
    assert wrong.probability(clear) < 0.5
    mixed = [(clear, i % 2 == 0) for i in range(200)]  # marks that surprise the model teach the most
    assert cal.adapted(mixed[:20]).spread > cal.adapted(mixed).spread and cal.adapted(mixed).spread < 0.2
    assert Calibration.from_json(cal.to_json()).spread == cal.between  # shipped: as unsure as systems differ


def test_the_fit_tells_how_far_systems_differ_from_their_outcomes() -> None:
    """Systems drawn with shifts of spread 0, 1 and 2 logits: the fitted spread follows, the
    weights are the model's, and one system alone cannot tell it (the prior's spread)."""
    fitted = [fit(_systems(spread)).between for spread in (0.0, 1.0, 2.0)]
    assert fitted[0] < 0.3 and 0.7 < fitted[1] < 1.3 and 1.5 < fitted[2] < 2.6
    rows = _systems(1.0)
    x = np.array([f.vector() for _, f, _ in rows])
    y = np.array([1.0 if ok else 0.0 for *_, ok in rows])
    w, _ = mixed_logistic(x, y, np.array([int(s[1:]) for s, _, _ in rows]))
    assert w[2] == pytest.approx(2.0, abs=0.3) and w[1] == pytest.approx(0.0, abs=0.3)
    assert fit(_rows()).between == 1.0


def test_a_system_left_out_is_fitted_on_the_others_only() -> None:
    rows = [*_systems(1.0, systems=3, n=200), *(("odd", f, True) for _, f, _ in _systems(0.0, systems=1, n=200))]
    left_out = apart(rows)
    assert sorted(left_out) == ["odd", "s0", "s1", "s2"]
    f = Features(0.3, 0.5, 3)
    # always right, "odd" lifts every fit it is in above the one it is left out of
    assert left_out["odd"].probability(f) < min(left_out[s].probability(f) for s in ("s0", "s1", "s2"))
    assert apart(_rows()) == {}


def test_the_shipped_calibration_is_the_fit_of_the_saved_results() -> None:
    """What the verdict's probability is fitted on is what the results page shows: a shipped
    calibration left behind by the engine it was fitted for fails here (`make results` refits)."""
    from rca.evaluation.report import calibration_rows
    from rca.evaluation.results import saved

    rows = [
        (name, f, ok)
        for name, evaluation in saved(Path(__file__).parents[2] / "results")
        for name, _, f, ok in calibration_rows(evaluation, "lats", name)
    ]
    refit, cal = fit(rows), shipped()
    assert cal.weights == pytest.approx(refit.weights, abs=1e-9)
    assert (cal.between, cal.likely) == pytest.approx((refit.between, refit.likely), abs=1e-9)
    assert cal.fitted_on.startswith(f"{len(rows)} first places of lats")
