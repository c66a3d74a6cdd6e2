"""bench.separability: how well what a saved ranking carries tells a right first place from a
wrong one, each set scored by a fit on the others."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from bench.separability import cases, left_out_auroc, main


def _case(i: int, right: bool, late: bool, rng: random.Random) -> dict:
    first = rng.uniform(0.2, 0.6)
    return {
        "engine": "lats",
        "dataset": "d",
        "case_id": f"c{i}",
        "error": None,
        "truth": {"service": "a" if right else "b", "fault_type": "cpu"},
        "modalities": {"metrics": True},
        "missing": ["asked late: the symptom was already degraded"] if late else [],
        "ranking": [
            {"service": "a", "score": first, "fault_type": "cpu"},
            {"service": "b", "score": first * rng.uniform(0.3, 1.0), "fault_type": "cpu"},
        ],
    }


def test_a_reading_that_tells_right_from_wrong_raises_the_auroc_left_out(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # three sets where the asked-late note, and nothing the shipped features read, says which
    # first places are wrong
    rng = random.Random(4)
    for s in ("one", "two", "three"):
        (tmp_path / s).mkdir()
        rows = [_case(i, right=i % 3 != 0, late=i % 3 == 0, rng=rng) for i in range(60)]
        payload = {"version": 4, "protocol": "realistic", "cases": rows}
        (tmp_path / s / "realistic.json.gz").write_bytes(gzip.compress(json.dumps(payload).encode()))
    rows = cases(tmp_path)
    assert len(rows) == 180 and {s for s, _, _ in rows} == {"one", "two", "three"}
    shipped, late = left_out_auroc(rows), left_out_auroc(rows, ("late",))
    assert shipped is not None and late is not None
    assert 0.3 < shipped < 0.7 and late > 0.95
    assert main([str(tmp_path)]) == 0 and "late" in capsys.readouterr().out
