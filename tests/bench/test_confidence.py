"""bench.confidence fits what a verdict sees of itself, in and left out of each set."""

from __future__ import annotations

import re

from bench.confidence import FEATURE_SETS, fit_report


def _rows(dataset: str, rights: list[bool], under_way: list[bool]) -> list[dict[str, object]]:
    return [
        {
            "dataset": dataset,
            "protocol": "realistic",
            "right": right,
            "confidence": -1.0,
            "lead": 0.5,
            "first under way": float(uw),
            "onset seen": 1.0,
            "set aside stronger": 0.0,
        }
        for right, uw in zip(rights, under_way, strict=True)
    ]


def test_a_feature_that_tells_right_from_wrong_on_every_set_calibrates_a_set_left_out() -> None:
    # on every set, first places under way are wrong and the rest right, at rates that differ by
    # set; the shipped features (the same on every case) can only say the other sets' rate
    rows = [
        r
        for d, right in (("a", 18), ("b", 10), ("c", 2))
        for r in _rows(d, [True] * right + [False] * (20 - right), [False] * right + [True] * (20 - right))
    ]
    report = fit_report(rows).split("\n\n")
    worst_out = {
        label: float(re.search(r"left out: mean [\d.]+, worst ([\d.]+)", part).group(1))  # type: ignore[union-attr]
        for label, part in zip(FEATURE_SETS, report, strict=False)
    }
    assert worst_out["shipped (confidence, lead)"] > 0.3
    assert worst_out["+ first under way"] < 0.05
