"""bench.leads counts first places right by their lead, per dataset, from eval results."""

from __future__ import annotations

import json
from pathlib import Path

from bench.leads import by_lead, main


def _case(dataset: str, first: float, second: float, right: bool) -> dict:
    return {
        "engine": "lats",
        "dataset": dataset,
        "case_id": f"{dataset}-{first}-{second}-{right}",
        "error": None,
        "truth": {"service": "a" if right else "b", "fault_type": "cpu"},
        "modalities": {"metrics": True},
        "ranking": [
            {"service": "a", "score": first, "fault_type": "cpu"},
            {"service": "b", "score": second, "fault_type": "cpu"},
        ],
    }


def test_first_places_are_counted_by_their_lead_and_late_is_left_out(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    realistic = {
        "protocol": "realistic",
        "cases": [
            _case("x", 0.4, 0.4, False),
            _case("x", 0.4, 0.3, True),
            _case("x", 0.4, 0.3, False),
            _case("y", 0.4, 0.3, True),
            _case("y", 0.5, 0.15, True),
        ],
    }
    late = {"protocol": "late", "cases": [_case("x", 0.4, 0.3, False)]}
    counts = by_lead([realistic, late])
    assert counts["x"][0] == (1, 0)  # a tie, wrong
    assert counts["x"][2] == (2, 1)  # a lead of a quarter: one of two right
    assert counts["y"][2] == (1, 1) and counts["y"][4] == (1, 1)  # a lead of 0.7 falls in the fifth bin
    assert by_lead([realistic, late], late=True)["x"][2] == (3, 1)
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(realistic))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "a tie" in out and "0.50" in out
