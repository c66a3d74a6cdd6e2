"""bench.overlap counts, from the labels alone, the windows that hold another fault's start,
and which wrong first places (and "likely" verdicts) name a fault begun inside the window."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest

from bench.overlap import held, main, still_running
from rca.sources.datasets import find_cases

LAB = Path(__file__).resolve().parents[1] / "data" / "lab-0"


def test_a_wrong_first_place_naming_a_fault_begun_in_the_window_is_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = find_cases(LAB)
    holding = asyncio.run(held(cases, "late"))
    crowded = [c for c in cases if holding[str(c.id)][1] - {c.label.service}]
    assert crowded, "the lab's faults come minutes apart: some late windows hold the next one"
    named = crowded[0]
    other = sorted(holding[str(named.id)][1] - {named.label.service})[0]
    rows = [
        {  # a case as `rcabot eval --json` saves it
            "engine": "lats",
            "dataset": c.incident.dataset,
            "case_id": str(c.id),
            "truth": {"service": c.label.service, "fault_type": c.label.fault_type.value},
            "ranking": [{"service": other if c is named else c.label.service, "fault_type": "unknown"}],
            "seconds": 0.1,
            "likely": c is named,
        }
        for c in cases
    ]
    path = tmp_path / "late.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"version": 4, "cases": rows}).encode()))
    assert main([str(LAB), "--protocol", "late", "--results", str(path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1].split()
    # wrong 1, naming a fault begun inside 1, likely 1, right 0, wrong naming one 1
    assert last[1:] == ["1", "1", "1", "0", "1"]


def test_a_fault_begun_while_the_previous_one_ran_is_told_from_the_labels_lengths() -> None:
    cases = find_cases(LAB)
    starts = {(c.label.service, c.label.start) for c in cases if c.label.start is not None}
    first = {
        min(c.label.start for c in cases if c.incident.dataset == d and c.label.start)
        for d in {c.incident.dataset for c in cases}
    }
    short = still_running(cases, {key: 1.0 for key in starts})
    assert short and not any(short.values())  # each fault over in a second: none overlaps
    long = still_running(cases, {key: 1e6 for key in starts})
    assert {i for i, on in long.items() if not on} == {str(c.id) for c in cases if c.label.start in first}
    assert still_running(cases, {}) == {}  # no lengths known: nothing said
