"""STAR's repair memory in the bot's record (SQLite or PostgreSQL): one row per successful repair,
shared by every process that opens the same record."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rca.star.memory import Pattern, RepairRecord
from storage.database import Migration, open_database

TABLE = "repair_memory"
MIGRATIONS = (
    Migration(
        1,
        (
            f"create table if not exists {TABLE} (id {{serial}}, fault_type {{text}}, modalities {{text}}, "
            "degree {int}, sparsity {int}, stage {text}, patch {text}, improvement {float})",
            f"create index if not exists idx_{TABLE}_fault_type_modalities on {TABLE} (fault_type, modalities)",
        ),
    ),
)


class SqlRepairMemory:
    """A RepairMemory kept in the bot's record, safe to share between threads and processes."""

    def __init__(self, target: Path | str) -> None:
        self._db = open_database(target)
        self._db.migrate("repair_memory", MIGRATIONS)

    def remember(self, record: RepairRecord) -> None:
        p = record.pattern
        row = {
            "fault_type": p.fault_type,
            "modalities": p.modalities,
            "degree": p.degree,
            "sparsity": p.sparsity,
            "stage": record.stage,
            "patch": record.patch,
            "improvement": record.improvement,
        }
        self._db.insert(TABLE, row)

    def similar(self, pattern: Pattern, *, limit: int = 5) -> Sequence[RepairRecord]:
        rows = self._db.query(
            f"select * from {TABLE} where fault_type = ? and modalities = ?", [pattern.fault_type, pattern.modalities]
        )
        records = [
            RepairRecord(
                Pattern(r["fault_type"], r["modalities"], r["degree"], r["sparsity"]),
                r["stage"],
                r["patch"],
                r["improvement"],
            )
            for r in rows
        ]
        records.sort(key=lambda r: (pattern.distance(r.pattern), -r.improvement))
        return records[:limit]

    def close(self) -> None:
        self._db.close()
