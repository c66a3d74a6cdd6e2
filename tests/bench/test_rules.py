"""bench.rules weighs each rule by what its absence changed, file by file, and names the rules
whose absence cost nothing on any file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bench.rules import deltas, firsts, free, main


def _write(path: Path, answers: dict[str, list[tuple[str, str]]]) -> Path:
    """A result file as `rcabot eval --json` writes it: per engine, each case's first place
    (service, type); every case's label is (a, cpu)."""
    rows = [
        {
            "engine": engine,
            "dataset": "set",
            "case_id": f"case-{i}",
            "truth": {"service": "a", "fault_type": "cpu"},
            "ranking": [{"service": s, "fault_type": t, "score": 0.5}],
            "seconds": 0.1,
        }
        for engine, tops in answers.items()
        for i, (s, t) in enumerate(tops)
    ]
    path.write_bytes(gzip.compress(json.dumps({"version": 4, "protocol": "realistic", "cases": rows}).encode()))
    return path


def test_a_rule_whose_absence_costs_a_case_anywhere_is_not_free(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _write(
        tmp_path / "one.json.gz",
        {
            "lats": [("a", "cpu"), ("a", "memory"), ("b", "cpu")],
            "lats-no-rule:x": [("a", "cpu"), ("a", "cpu"), ("b", "cpu")],  # a type gained
            "lats-no-rule:y": [("b", "cpu"), ("a", "memory"), ("a", "cpu")],  # one lost, one gained
        },
    )
    two = _write(
        tmp_path / "two.json.gz",
        {"lats": [("a", "cpu")], "lats-no-rule:x": [("a", "cpu")], "lats-no-rule:y": [("a", "cpu")]},
    )
    first = deltas(firsts(one))
    assert (first["x"].first, first["x"].typed) == (0, 1)
    assert (first["y"].first, first["y"].typed, first["y"].gained, first["y"].lost) == (0, 0, ("case-2",), ("case-0",))
    table = {"one": first, "two": deltas(firsts(two))}
    assert free(table) == ["x", "y"]  # y's gain and loss cancel in the count, so it is free by the count
    worse = _write(
        tmp_path / "three.json.gz",
        {
            "lats": [("a", "cpu"), ("a", "cpu")],
            "lats-no-rule:x": [("a", "cpu"), ("c", "cpu")],  # a first place lost, its type kept (as the page counts)
            "lats-no-rule:y": [("a", "cpu")] * 2,
        },
    )
    table["three"] = deltas(firsts(worse))
    assert free(table) == ["y"]
    assert main([str(one), str(two), str(worse), "--cases"]) == 0
    out = capsys.readouterr().out
    assert "| x | +0 / +1 | +0 / +0 | -1 / +0 |" in out
    assert "costs nothing anywhere: y" in out
    assert "one y: gains case-2; loses case-0" in out


def test_results_without_the_engine_with_every_rule_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "bare.json.gz", {"lats-no-rule:x": [("a", "cpu")]})
    with pytest.raises(ValueError, match="no lats results"):
        deltas(firsts(path))
