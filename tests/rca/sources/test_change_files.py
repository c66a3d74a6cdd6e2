"""A recording's changes.jsonl: written and read back as they were, hostile lines skipped and
counted, any number of files under a data folder read together and cut to the window."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rca.changes import Change, ChangeKind, write_changes
from rca.sources.change_files import CHANGES_FILE, FileChanges, read_changes
from rca.telemetry import Window

T = 1_796_374_800.0


def test_changes_written_are_read_back_as_they_were(tmp_path: Path) -> None:
    changes = [
        Change("payments", ChangeKind.FLAG, T + 60, "off", "on", "ana", "", "marker"),
        Change("orders", ChangeKind.DEPLOY, T, "1.4.2", "1.4.3", "ci", "https://ci.example.com/7", "github"),
    ]
    write_changes(changes, tmp_path / CHANGES_FILE)
    assert read_changes(tmp_path / CHANGES_FILE) == sorted(changes, key=lambda c: c.time)


def test_lines_that_are_not_changes_are_skipped_and_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    good = Change("orders", ChangeKind.DEPLOY, T, "", "1.4.3", "", "", "file")
    write_changes([good], tmp_path / CHANGES_FILE)
    with (tmp_path / CHANGES_FILE).open("a") as f:
        f.write('not json\n{"service": "orders", "kind": "reboot", "time": "2026-12-04T09:00:00Z"}\n')
        f.write('{"service": "", "kind": "deploy", "time": "2026-12-04T09:00:00Z"}\n[1, 2]\n\n')
        f.write('{"service": "orders", "kind": "deploy", "time": "yesterday"}\n')
    with caplog.at_level(logging.WARNING):
        assert read_changes(tmp_path / CHANGES_FILE) == [good]
    assert "skipped 5 line(s)" in caplog.text


def test_every_changes_file_under_a_folder_is_read_and_cut_to_the_window(tmp_path: Path) -> None:
    for i, day in enumerate(("a", "b/c")):
        (tmp_path / day).mkdir(parents=True)
        write_changes(
            [Change(f"svc-{i}", ChangeKind.CONFIG, T + 600 * i, "", "v2", "", "", "file")],
            tmp_path / day / CHANGES_FILE,
        )
    source = FileChanges(tmp_path)
    assert [c.service for c in asyncio.run(source.changes(Window(T - 60, T + 1200)))] == ["svc-0", "svc-1"]
    assert [c.service for c in asyncio.run(source.changes(Window(T + 300, T + 1200)))] == ["svc-1"]
    assert asyncio.run(FileChanges(tmp_path / "a").changes(Window(T + 300, T + 1200))) == []
