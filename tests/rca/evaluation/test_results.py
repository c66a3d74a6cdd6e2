"""The results page is computed from the saved per-case answers: its figures are the eval's own,
whatever the order or packing of the files, and a file that is not an evaluation is refused."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from rca.errors import InputError
from rca.evaluation.harness import CaseResult
from rca.evaluation.metrics import Outcome
from rca.evaluation.report import summaries, to_json
from rca.evaluation.results import page, plot, rows, saved
from rca.model import Candidate, CaseId, Diagnosis, FaultType


def _result(i: int, engine: str, rank: int) -> CaseResult:
    names = ("a", "b", "c", "d")
    ranking = tuple(Candidate(n, 1.0 / (k + 1), FaultType.CPU if k else FaultType.MEMORY) for k, n in enumerate(names))
    truth = names[rank - 1]
    outcome = Outcome(engine, "set", f"c{i}", truth, FaultType.MEMORY, names, FaultType.MEMORY, 0.1 * i)
    return CaseResult(None, Diagnosis(CaseId(f"c{i}"), engine, ranking), outcome)


def _results(seed: int) -> list[CaseResult]:
    rng = random.Random(seed)
    return [_result(i, engine, rng.randint(1, 4)) for engine in ("lats", "baro") for i in range(40)]


def test_the_page_gives_the_eval_s_own_figures(tmp_path: Path) -> None:
    results = _results(3)
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "realistic.json").write_text(json.dumps(to_json(results, protocol="realistic")))
    table = rows(saved(tmp_path))
    expected = {s.engine: s for s in summaries(results) if s.group == "all"}
    assert {r.engine for r in table} == {"lats", "baro"}
    for r in table:
        assert (r.set, r.protocol, r.cases) == ("lab", "realistic", 40)
        assert r.ac1 == pytest.approx(expected[r.engine].ac1)
        assert r.ac3 == pytest.approx(expected[r.engine].ac3)
        assert r.fault_type == pytest.approx(expected[r.engine].fault_acc)
        assert r.seconds == pytest.approx(expected[r.engine].median_seconds)
    text = page(table, plot_name="results.svg")
    lats = next(r for r in table if r.engine == "lats")
    assert f"| lab | realistic | 40 | {lats.ac1:.3f} |" in text
    assert "results.svg" in text and plot(table).startswith(b"<?xml")


def test_packing_and_order_change_no_figure(tmp_path: Path) -> None:
    a, b = _results(1), _results(2)
    for root, pack in ((tmp_path / "plain", False), (tmp_path / "packed", True)):
        for name, res, protocol in (("x", a, "realistic"), ("y", b, "cropped")):
            (root / "set").mkdir(parents=True, exist_ok=True)
            raw = json.dumps(to_json(res, protocol=protocol)).encode()
            target = root / "set" / (f"{name}.json.gz" if pack else f"{name}.json")
            target.write_bytes(gzip.compress(raw) if pack else raw)
    assert rows(saved(tmp_path / "plain")) == rows(saved(tmp_path / "packed"))
    assert [r.protocol for r in rows(saved(tmp_path / "plain"))][:2] == ["realistic", "realistic"]  # realistic first


def test_what_is_not_an_evaluation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no <set>"):
        saved(tmp_path)
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "x.json").write_text("{not json")
    with pytest.raises(InputError, match="not an evaluation"):
        saved(tmp_path)
    (tmp_path / "set" / "x.json").write_text(json.dumps({"version": 3, "cases": []}))
    with pytest.raises(InputError, match="older than"):
        saved(tmp_path)


def test_the_same_table_draws_the_same_bytes(tmp_path: Path) -> None:
    """Re-making the page from unchanged results leaves the plot's file unchanged (no new
    internal ids), so a commit shows only what moved."""
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "realistic.json").write_text(json.dumps(to_json(_results(4), protocol="realistic")))
    table = rows(saved(tmp_path))
    assert plot(table) == plot(table)
