"""Changes kept beside a recording: `changes.jsonl` (one change a line, as `rcabot snapshot`
writes it, rca.changes.write_changes) anywhere under a data folder, so a replay knows what
changed. Every line is hostile until parsed: one that cannot be read is skipped and counted."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from rca.changes import Change
from rca.errors import InputError
from rca.telemetry import Window

CHANGES_FILE = "changes.jsonl"
log = logging.getLogger(__name__)


class FileChanges:
    """The changes of every `changes.jsonl` under a folder."""

    what = "the recording's changes"

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: list[Change] | None = None

    async def changes(self, window: Window) -> list[Change]:
        if self._read is None:
            self._read = [c for path in sorted(self.root.rglob(CHANGES_FILE)) for c in read_changes(path)]
        return sorted(
            (c for c in self._read if window.start <= c.time <= window.end), key=lambda c: (c.time, c.service)
        )


def read_changes(path: Path) -> list[Change]:
    """The changes a file holds; a line that is not one is skipped, and the count logged."""
    out, bad = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            out.append(Change.from_json(json.loads(line), source="file"))
        except (ValueError, TypeError, KeyError, InputError):
            bad += 1
    if bad:
        log.warning("%s: skipped %d line(s) that are not changes", path, bad)
    return out
