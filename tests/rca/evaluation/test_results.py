"""The results page is computed from the saved per-case answers: its figures are the eval's own,
whatever the order or packing of the files, and a file that is not an evaluation is refused."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from rca.errors import InputError
from rca.evaluation.harness import CaseResult
from rca.evaluation.metrics import Outcome
from rca.evaluation.report import summaries, to_json
from rca.evaluation.results import LAB_POOL, lab_page, lab_pool, page, plot, read_cases, saved, tabulate
from rca.model import Candidate, CaseId, Diagnosis, FaultType


def _result(i: int, engine: str, rank: int) -> CaseResult:
    names = ("a", "b", "c", "d")
    ranking = tuple(Candidate(n, 1.0 / (k + 1), FaultType.CPU if k else FaultType.MEMORY) for k, n in enumerate(names))
    truth = names[rank - 1]
    outcome = Outcome(engine, "set", f"c{i}", truth, FaultType.MEMORY, names, FaultType.MEMORY, 0.1 * i)
    return CaseResult.of(None, Diagnosis(CaseId(f"c{i}"), engine, ranking), outcome)


def _results(seed: int) -> list[CaseResult]:
    rng = random.Random(seed)
    return [_result(i, engine, rng.randint(1, 4)) for engine in ("lats", "baro") for i in range(40)]


def test_the_page_gives_the_eval_s_own_figures(tmp_path: Path) -> None:
    results = _results(3)
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "realistic.json").write_text(json.dumps(to_json(results, protocol="realistic")))
    table = tabulate(read_cases(saved(tmp_path)))
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
    assert tabulate(read_cases(saved(tmp_path / "plain"))) == tabulate(read_cases(saved(tmp_path / "packed")))
    assert [r.protocol for r in tabulate(read_cases(saved(tmp_path / "plain")))][:2] == [
        "realistic",
        "realistic",
    ]  # realistic first


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
    table = tabulate(read_cases(saved(tmp_path)))
    assert plot(table) == plot(table)


def _save(root: Path, set_name: str, results: list[CaseResult], protocol: str = "realistic") -> None:
    (root / set_name).mkdir(parents=True, exist_ok=True)
    (root / set_name / f"{protocol}.json").write_text(json.dumps(to_json(results, protocol=protocol)))


def test_the_lab_pools_case_by_case_and_each_set_learns_alone(tmp_path: Path) -> None:
    """The pooled lab row is the eval's figures over the union of the lab's cases; a probability
    learns from its own set's marks only, so which set is read first changes nothing."""
    a, b = _results(5), _results(6)
    for root, names in ((tmp_path / "ab", ("lab-a", "lab-b")), (tmp_path / "ba", ("lab-b", "lab-a"))):
        _save(root, names[0], a)
        _save(root, names[1], b)
        _save(root, "trainticket", _results(7))
    pooled = tabulate(read_cases(saved(tmp_path / "ab")), pool=lab_pool)
    assert {r.set for r in pooled} == {LAB_POOL, "trainticket"}
    union = {s.engine: s for s in summaries(a + b) if s.group == "all"}
    for r in (r for r in pooled if r.set == LAB_POOL):
        assert r.cases == 80
        assert r.ac1 == pytest.approx(union[r.engine].ac1)
        assert r.fault_type == pytest.approx(union[r.engine].fault_acc)
    assert pooled == tabulate(read_cases(saved(tmp_path / "ba")), pool=lab_pool)
    each = tabulate(read_cases(saved(tmp_path / "ab")))
    assert {r.set for r in each} == {"lab-a", "lab-b", "trainticket"}
    text, lab = page(pooled, lab_page="results-lab.md"), lab_page(each)
    assert f"| {LAB_POOL} | realistic | 80 |" in text and "(results-lab.md)" in text
    assert "| lab-a | realistic | 40 |" in lab and "trainticket" not in lab


def test_grounded_first_places_are_counted_only_where_the_run_saved_them(tmp_path: Path) -> None:
    results = [
        replace(r, outcome=replace(r.outcome, grounded=i % 3 == 0))
        for i, r in enumerate(_results(4))
        if r.outcome.engine == "lats"
    ]
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "realistic.json").write_text(json.dumps(to_json(results, protocol="realistic")))
    row = tabulate(read_cases(saved(tmp_path)))[0]
    assert row.ac1_grounded == pytest.approx(sum(r.outcome.right and i % 3 == 0 for i, r in enumerate(results)) / 40)
    assert row.ac1_grounded <= row.ac1
    older = to_json(results, protocol="cropped")
    for case in older["cases"]:
        del case["grounded"]  # saved before the count
    (tmp_path / "set" / "cropped.json").write_text(json.dumps(older))
    rows = {r.protocol: r for r in tabulate(read_cases(saved(tmp_path)))}
    assert rows["cropped"].ac1_grounded is None and rows["cropped"].ac1 == pytest.approx(row.ac1)
    assert f"| set | cropped | 40 | {row.ac1:.3f} | – |" in page(list(rows.values()))
