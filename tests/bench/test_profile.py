"""bench.profile names where an investigation's time goes, costliest first."""

from __future__ import annotations

from pathlib import Path

from bench.profile import profile, top


def test_the_costs_of_an_investigation_are_ranked_and_ours_are_ours(petshop_slice: Path) -> None:
    stats = profile(str(petshop_slice), match="", cases=1, engine="lats", protocol="realistic")
    every, ours = top(stats, 10), top(stats, 10, ours=True)
    assert len(every) == 10 and len(ours) == 10
    for costs in (every, ours):
        assert [c.seconds for c in costs] == sorted((c.seconds for c in costs), reverse=True)
        assert all(0.0 <= c.share <= 1.0 for c in costs)
    assert all(c.where.startswith(("rca/", "bot/", "bench/", "lab/")) for c in ours)
    assert any(c.where.startswith("rca/evidence/") for c in ours)  # reading the evidence costs something
