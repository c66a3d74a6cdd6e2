"""A lab recording's fault-free stretch: its warm-up kept apart, as the Nezha layout keeps one.

Nezha's recordings hold `construct_data/<day>/{log,trace,metric}/`: telemetry of the same
system apart from the incidents, which `rca.sources.nezha` reads whole as normal behaviour
beside the hour before a window. A lab recording is short. A window that reaches back 15-60
minutes often begins before the recording did, and a recording that begins at the fault
(`--protocol cropped`) has nothing before it at all; its series then have no normal, where a
system with history would have one. The warm-up (load, no fault, no change) is such a stretch:
its whole minutes of logs and traces, and its metric rows, are kept as the recording's
construct_data.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from rca.sources.change_files import CHANGES_FILE, read_changes
from rca.sources.files import csv_files, open_text
from rca.sources.nezha import load_nezha
from rca.sources.nezha_folder import minute_of

MODALITIES = ("log", "trace")  # kept as minute files; metrics as the rows of each series' file


def first_event(recording: Path) -> float | None:
    """When a lab recording's first fault or change was made (its labels and change journal),
    None where it holds neither."""
    times = [case.label.start for case in load_nezha(recording) if case.label.start is not None]
    times += [c.time for path in recording.glob(f"rca_data/*/{CHANGES_FILE}") for c in read_changes(path)]
    return min(times, default=None)


def keep_normal(recording: Path) -> list[Path]:
    """Copy the log and trace minute files of a lab recording (OUT/lab-<seed>) that end before its
    first fault or change, and the rows of its metric files taken before it, into
    construct_data/<day>/, for each day it spans (one that runs past midnight reads the same
    stretch on its second day); returns the files written. Running it again writes the same
    files; a recording with neither fault nor change keeps nothing."""
    first = first_event(recording)
    if first is None:
        return []
    days = sorted(p for p in (recording / "rca_data").iterdir() if p.is_dir())
    kept = [
        path
        for day in days
        for modality in MODALITIES
        for path in sorted((day / modality).glob(f"*_{modality}.csv*"))
        if (minute := minute_of(path, day.name)) is not None and minute.end <= first
    ]
    rows = {path.name: _rows_before(path, first) for day in days for path in csv_files(day / "metric")}
    written = []
    for day in days:  # each day's incidents read the stretch (the reader takes a day's construct_data)
        for path in kept:
            target = recording / "construct_data" / day.name / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            written.append(target)
        for name, lines in rows.items():
            if len(lines) > 1:  # a header and at least one row
                target = recording / "construct_data" / day.name / "metric" / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with open_text(target, "w", newline="") as out:
                    csv.writer(out).writerows(lines)
                written.append(target)
    return written


def described(kept: list[Path]) -> str:
    """What `keep_normal` kept, in words: "12 minute files and 7 metric files"."""
    metric = sum(1 for p in kept if p.parent.name == "metric")
    return f"{len(kept) - metric} minute files and {metric} metric files"


def _rows_before(path: Path, first: float) -> list[list[str]]:
    """A metric file's header and its rows sampled before `first` (its TimeStamp column)."""
    with open_text(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        if "TimeStamp" not in header:
            return []
        at = header.index("TimeStamp")
        return [header, *(row for row in reader if len(row) > at and _before(row[at], first))]


def _before(stamp: str, first: float) -> bool:
    try:
        return float(stamp) < first
    except ValueError:
        return False
