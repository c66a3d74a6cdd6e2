"""bench/perturb.py: the joint scaling of every constant, with rules switched off throughout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.perturb import main


def test_a_rule_switched_off_is_off_in_the_shipped_reading_and_every_draw(
    nezha_slice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "perturb.json"
    assert main([str(nezha_slice), "--draws", "3", "--ablate", "rule:background,rule:timing", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "without background, timing" in printed
    doc = json.loads(out.read_text())
    assert doc["ablate"] == ["background", "timing"] and len(doc["per_draw"]) == 3
    assert all(0.0 <= row["min"] <= row["median"] <= row["max"] <= 1.0 for row in doc["rows"])


def test_an_unknown_rule_is_refused_before_any_case_is_read(nezha_slice: Path) -> None:
    with pytest.raises(SystemExit):
        main([str(nezha_slice), "--ablate", "rule:no_such_rule"])
