"""Opening rcabot's SQLite files: one way, the same safeguards everywhere."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import sqlite_utils


def open_database(path: Path) -> sqlite_utils.Database:
    """A WAL-mode database shared between threads (callers lock around use); a new file is
    owner-only, since what rcabot keeps quotes telemetry and names services."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite_utils.Database(sqlite3.connect(path, check_same_thread=False))
    if new:
        os.chmod(path, 0o600)
    db.enable_wal()
    return db
