"""STAR's repair memory in SQLite (sqlite-utils, WAL): one row per successful repair."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from rca.star.memory import Pattern, RepairRecord
from storage.database import open_database

TABLE = "repair_memory"


class SqliteRepairMemory:
    """A RepairMemory kept in a SQLite file, safe to share between threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = open_database(self.path)
        self._lock = threading.Lock()
        table = self._db[TABLE]
        if not table.exists():  # type: ignore[union-attr]
            self._db.create_table(
                TABLE,
                {"id": int, "fault_type": str, "modalities": str, "degree": int, "sparsity": int,
                 "stage": str, "patch": str, "improvement": float},  # fmt: skip
                pk="id",
            )
            self._db[TABLE].create_index(["fault_type", "modalities"])  # type: ignore[union-attr]

    def remember(self, record: RepairRecord) -> None:
        p = record.pattern
        row = {"fault_type": p.fault_type, "modalities": p.modalities, "degree": p.degree,
               "sparsity": p.sparsity, "stage": record.stage, "patch": record.patch,
               "improvement": record.improvement}  # fmt: skip
        with self._lock, self._db.conn:  # one transaction: committed whole or not at all
            self._db[TABLE].insert(row)  # type: ignore[union-attr]

    def similar(self, pattern: Pattern, *, limit: int = 5) -> Sequence[RepairRecord]:
        with self._lock:
            rows = list(self._db[TABLE].rows_where(  # type: ignore[union-attr]
                "fault_type = ? and modalities = ?", [pattern.fault_type, pattern.modalities]))  # fmt: skip
        records = [RepairRecord(Pattern(r["fault_type"], r["modalities"], r["degree"], r["sparsity"]),
                                r["stage"], r["patch"], r["improvement"]) for r in rows]  # fmt: skip
        records.sort(key=lambda r: (pattern.distance(r.pattern), -r.improvement))
        return records[:limit]

    def close(self) -> None:
        with self._lock:  # not while another thread is inside a query
            self._db.close()
