"""A lab recording's fault-free stretch: its warm-up kept apart, as the Nezha layout keeps one.

Nezha's recordings hold `construct_data/<day>/{log,trace}/`: logs and traces of the same system
with no fault, which `rca.sources.nezha` reads whole as normal behaviour beside the hour before
a window. A lab recording is short. A window that reaches back 15-60 minutes often begins
before the recording did, and its traces and logs then have no normal at all, where a system
with history would have one. The warm-up (load, no fault, no change) is such a stretch: its
whole minutes are kept as the recording's construct_data.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rca.sources.change_files import CHANGES_FILE, read_changes
from rca.sources.nezha import load_nezha
from rca.sources.nezha_folder import minute_of

MODALITIES = ("log", "trace")  # what the layout keeps apart (metrics are read from the hour before)


def first_event(recording: Path) -> float | None:
    """When a lab recording's first fault or change was made (its labels and change journal),
    None where it holds neither."""
    times = [case.label.start for case in load_nezha(recording) if case.label.start is not None]
    times += [c.time for path in recording.glob(f"rca_data/*/{CHANGES_FILE}") for c in read_changes(path)]
    return min(times, default=None)


def keep_normal(recording: Path) -> list[Path]:
    """Copy the log and trace minute files of a lab recording (OUT/lab-<seed>) that end before its
    first fault or change into construct_data/<day>/, for each day it spans (one that runs past
    midnight reads the same stretch on its second day); returns the files written. Running it
    again writes the same files; a recording with neither fault nor change keeps nothing."""
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
    written = []
    for day in days:  # each day's incidents read the stretch (the reader takes a day's construct_data)
        for path in kept:
            target = recording / "construct_data" / day.name / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            written.append(target)
    return written
