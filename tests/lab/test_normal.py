"""A lab recording's warm-up kept as its fault-free stretch: only minutes wholly before the first
fault or change, read back by the Nezha reader as normal behaviour."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lab.normal import first_event, keep_normal
from rca.changes import Change, ChangeKind, write_changes
from rca.model import Modality
from rca.sources.change_files import CHANGES_FILE
from rca.sources.datasets import find_cases
from rca.sources.files import read_csv
from rca.sources.nezha_folder import minute_of

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "lab-0"


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    out = tmp_path / "lab-0"
    shutil.copytree(FIXTURE, out)
    return out


def _first_fault(recording: Path) -> float:
    return min(c.label.start for c in find_cases(recording) if c.label.start is not None)


def _minute_start(path: Path) -> float:
    minute = minute_of(path, path.parents[1].name)
    assert minute is not None
    return minute.start


def test_only_minutes_that_end_before_the_first_fault_are_kept(recording: Path) -> None:
    first = _first_fault(recording)
    assert first_event(recording) == first
    every = keep_normal(recording)
    kept = [p for p in every if p.parent.name != "metric"]
    assert kept and {p.parent.name for p in kept} == {"log", "trace"}
    for path in kept:
        day = path.parents[1].name
        source = recording / "rca_data" / day / path.parent.name / path.name
        assert source.read_bytes() == path.read_bytes()
        assert _minute_start(path) + 60 <= first
    # every minute file that ends before the first fault is kept, none after it
    day = kept[0].parents[1].name
    before = sorted(p.name for p in (recording / "rca_data" / day / "trace").iterdir() if p.name < "20_51")
    assert sorted(p.name for p in kept if p.parent.name == "trace") == before
    assert keep_normal(recording) == every  # again: the same files
    # each metric file's rows sampled before the first fault, and no other
    metric = [p for p in every if p.parent.name == "metric"]
    assert metric and len(metric) == len(list((recording / "rca_data" / day / "metric").iterdir()))
    for path in metric:
        source = read_csv(recording / "rca_data" / path.parents[1].name / "metric" / path.name)
        stretch = read_csv(path)
        assert list(stretch.columns) == list(source.columns)
        assert len(stretch) == (source["TimeStamp"] < first).sum() > 0
        assert (stretch["TimeStamp"] < first).all()


def test_a_change_before_the_first_fault_ends_the_stretch(recording: Path) -> None:
    first = _first_fault(recording)
    change = Change("cart", ChangeKind.DEPLOY, first - 240, before="1", after="2", who="ci")
    write_changes([change], next((recording / "rca_data").iterdir()) / CHANGES_FILE)
    assert first_event(recording) == pytest.approx(first - 240, abs=1)
    every = keep_normal(recording)
    kept = [p for p in every if p.parent.name != "metric"]
    assert kept and all(_minute_start(p) + 60 <= first - 240 for p in kept)
    assert all((read_csv(p)["TimeStamp"] < first - 240).all() for p in every if p.parent.name == "metric")
    assert max(_minute_start(p) for p in kept) + 120 > first - 240  # up to the change, not short of it


def test_a_recording_that_runs_past_midnight_reads_the_stretch_on_its_second_day(recording: Path) -> None:
    (recording / "rca_data" / "2026-12-04").mkdir()
    kept = keep_normal(recording)
    first_day = {p.name for p in kept if p.parents[1].name == "2026-12-03"}
    assert first_day and {p.name for p in kept if p.parents[1].name == "2026-12-04"} == first_day


def test_a_recording_without_faults_or_changes_keeps_nothing(recording: Path) -> None:
    for path in recording.glob("rca_data/*/lab-fault_list.json"):
        path.write_text("{}\n")
    assert first_event(recording) is None
    assert keep_normal(recording) == []
    assert not (recording / "construct_data").exists()


def test_the_kept_stretch_is_read_as_the_normal_of_every_modality(recording: Path) -> None:
    assert all("no construct_data" in " ".join(c.incident.notes) for c in find_cases(recording))
    keep_normal(recording)
    for case in find_cases(recording):
        assert "no construct_data" not in " ".join(case.incident.notes)
        for modality in (Modality.LOGS, Modality.TRACES, Modality.METRICS):
            normal = case.incident.normal_for(modality)
            assert normal is not None and len(normal.parts()) == 2  # the hour before, and the stretch apart


def test_rcabot_lab_normal_keeps_the_stretch_of_each_recording_found(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    assert main(["lab", "normal", str(recording.parent)]) == 0
    assert "12 minute files and 8 metric files of its warm-up kept" in capsys.readouterr().out
    assert (recording / "construct_data").is_dir()
    assert main(["lab", "normal", str(recording / "rca_data" / "nothing-here")]) == 2
    assert "no lab recording" in capsys.readouterr().err
