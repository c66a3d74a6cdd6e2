"""bench.grounded reads the saved evaluations with the labels: a right first place that does not
rest on its fault's time is counted, and named where the same service was faulted earlier inside
the window; a file saved before the count is refused, not read as "nothing grounded"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.grounded import main
from rca.sources.datasets import find_cases
from rca.telemetry import Window

LAB = Path(__file__).resolve().parents[1] / "data" / "lab-0"


def _saved(tmp_path: Path, ungrounded: str | None, *, field: bool = True) -> Path:
    rows = []
    for c in find_cases(LAB):
        assert c.label.start is not None
        row = {  # a case as `rcabot eval --json` saves it: every first place right
            "engine": "lats",
            "dataset": c.incident.dataset,
            "case_id": str(c.id),
            "truth": {"service": c.label.service, "fault_type": c.label.fault_type.value},
            "ranking": [{"service": c.label.service, "fault_type": "unknown"}],
            "window": Window(c.label.start - 1800.0, c.label.start + 120.0).to_iso(),
            "seconds": 0.1,
        }
        if field:
            row["grounded"] = str(c.id) != ungrounded
        rows.append(row)
    path = tmp_path / "realistic.json"
    path.write_text(json.dumps({"version": 5, "cases": rows}))
    return path


def test_a_right_first_place_resting_on_an_earlier_fault_of_its_service_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = sorted(find_cases(LAB), key=lambda c: c.label.start or 0.0)
    again = next(c for i, c in enumerate(cases) if c.label.service in {d.label.service for d in cases[:i]})
    assert main([str(LAB), "--results", str(_saved(tmp_path, str(again.id))), "--cases"]) == 0
    out = capsys.readouterr().out.rstrip().splitlines()
    assert f"  {again.id} {again.label.service}: the same service faulted earlier in the window" in out
    row = out[-1].split()
    # cases, the same service faulted earlier inside the window, right, grounded, not, of those same earlier
    assert row[0] == "lab-0" and row[1:7] == [str(len(cases)), "3", str(len(cases)), str(len(cases) - 1), "1", "1"]
    assert float(row[8]) == pytest.approx((len(cases) - 1) / len(cases), abs=1e-3)


def test_a_run_saved_before_the_count_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main([str(LAB), "--results", str(_saved(tmp_path, None, field=False))])
    assert stop.value.code == 2
