"""Logs from plain files: a directory with one file (or folder of files) per service, JSON
lines or text, plain or gzip, read through the one normalisation pipeline.

    logs/
      ts-order-service.log          a service's file: the service is the file's stem
      ts-payment-service.jsonl.gz
      ts-user-service/              or a folder of its files (rotated logs)
        app.log  app.log.1
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import numpy as np

from rca.errors import DataError
from rca.sources.files import open_text, signature
from rca.sources.normalise import normalise
from rca.sources.protocols import LogQuery
from rca.telemetry import LogRecord

log = logging.getLogger("rcabot.sources")
_SUFFIXES = re.compile(r"(\.(log|jsonl|json|txt|out))?(\.\d+)?(\.gz)?$")
MAX_FILE_BYTES = 512 * 1024 * 1024


def service_of_file(path: Path) -> str:
    """`ts-order-service.log.1.gz` -> `ts-order-service`."""
    return _SUFFIXES.sub("", path.name) or path.name


class LogDirectory:
    """A LogSource over a directory of per-service log files, kept in memory and read again
    when a file appears, grows or changes (a live service's log keeps growing)."""

    def __init__(self, root: Path, *, year: int | None = None) -> None:
        if not root.is_dir():
            raise DataError(f"{root}: not a directory of log files")
        self.root = root
        self.year = year
        self._records: dict[str, tuple[np.ndarray, list[LogRecord]]] | None = None
        self._read_at: tuple[tuple[str, int, int], ...] = ()  # the files as they were when read
        self._lock = asyncio.Lock()

    def files(self) -> dict[str, list[Path]]:
        out: dict[str, list[Path]] = {}
        for entry in sorted(self.root.iterdir()):
            if entry.is_dir():
                out.setdefault(entry.name, []).extend(sorted(p for p in entry.iterdir() if p.is_file()))
            elif entry.is_file() and not entry.name.startswith("."):
                out.setdefault(service_of_file(entry), []).append(entry)
        return out

    async def entities(self) -> tuple[str, ...]:
        return tuple(sorted(self.files()))

    async def records(self, query: LogQuery) -> list[LogRecord]:
        index = await self._index()
        wanted = set(query.entities)
        out: list[LogRecord] = []
        for service, (times, records) in index.items():
            if wanted and service not in wanted:
                continue
            lo = int(np.searchsorted(times, query.window.start, side="left"))
            hi = int(np.searchsorted(times, query.window.end, side="left"))
            out.extend(records[lo:hi])
        return sorted(out, key=lambda r: r.time)

    async def _index(self) -> dict[str, tuple[np.ndarray, list[LogRecord]]]:
        async with self._lock:
            now = signature(p for paths in self.files().values() for p in paths)
            if self._records is None or now != self._read_at:
                self._records, self._read_at = await asyncio.to_thread(self._read_all), now
            return self._records

    def _read_all(self) -> dict[str, tuple[np.ndarray, list[LogRecord]]]:
        out = {}
        for service, paths in self.files().items():
            records: list[LogRecord] = []
            for path in paths:
                records.extend(self._read(path, service))
            records.sort(key=lambda r: r.time)
            out[service] = (np.fromiter((r.time for r in records), dtype=float, count=len(records)), records)
        return out

    def _read(self, path: Path, service: str) -> list[LogRecord]:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DataError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; rotate it or read it through Loki")
        try:
            with open_text(path, encoding="utf-8", errors="replace") as fh:
                result = normalise(fh, service=service, year=self.year)
        except (OSError, EOFError) as exc:
            raise DataError(f"{path}: cannot be read ({exc})") from exc
        if result.undated:
            log.warning("%s: %d line(s) without a timestamp of their own", path, result.undated)
        return result.records
