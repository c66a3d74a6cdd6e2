"""Reading telemetry files: plain or gzip CSV, with errors that name the file."""

from __future__ import annotations

import gzip
import logging
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import IO, cast

import numpy as np
import pandas as pd

from rca.errors import MalformedFile

log = logging.getLogger(__name__)

_CSV_SUFFIXES = (".csv", ".csv.gz")


def is_csv(path: Path) -> bool:
    return path.name.endswith(_CSV_SUFFIXES)


def open_text(path: Path, mode: str = "r", **options: str) -> IO[str]:
    """A telemetry file as text, gzip-compressed where its name ends in .gz (`mode` "r" or "w";
    `options` as for `open`: encoding, errors, newline)."""
    if path.suffix == ".gz":
        return cast(IO[str], gzip.open(path, mode + "t", **options))  # type: ignore[call-overload]
    return path.open(mode, **options)  # type: ignore[call-overload]


def csv_files(folder: Path) -> list[Path]:
    """CSV files (plain or gzip) directly in a folder, sorted by name."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and is_csv(p))


def read_csv(
    path: Path,
    *,
    required: Iterable[str] = (),
    header: int | list[int] = 0,
    dtype: object = None,
    skip_bad_lines: bool = False,
) -> pd.DataFrame:
    """A CSV as a frame; MalformedFile when it cannot be parsed or lacks a required column.

    With skip_bad_lines, rows with the wrong number of fields (a truncated log line) are
    skipped and counted in a warning that names the file.
    """
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path,
                header=header,
                dtype=dtype,
                compression="infer",
                on_bad_lines="warn" if skip_bad_lines else "error",
            )
        skipped = sum(str(w.message).count("Skipping line") for w in caught)
        if skipped:
            log.warning("%s: skipped %d malformed line(s)", path, skipped)
    except (OSError, EOFError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise MalformedFile(path, f"cannot read as CSV ({exc.__class__.__name__}: {exc})") from exc
    except pd.errors.EmptyDataError as exc:
        raise MalformedFile(path, "file is empty") from exc
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise MalformedFile(path, f"missing column(s) {', '.join(missing)}")
    return frame


def shared(values: pd.Series | np.ndarray, *, held: np.ndarray | None = None) -> np.ndarray:
    """A column of text as objects, each distinct text held once: a column that repeats a few
    names (pods, operations, a trace's id on each of its spans) costs a pointer a row, not a
    string a row; a text also in `held` (another column) is that column's object. The values
    are the same; only their copies go."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    if held is not None:
        same = dict(zip(held.tolist(), held.tolist(), strict=True))
        uniques = [same.get(u, u) for u in uniques.tolist()]
    return np.asarray(uniques, dtype=object)[codes]


_POD_HASHES = re.compile(r"-[a-z0-9]{6,10}-[a-z0-9]{5}$")
_STATEFUL_ORDINAL = re.compile(r"-\d+$")


def service_of_pod(pod: str) -> str:
    """The Kubernetes workload a pod belongs to: `ts-basic-service-5dc8d4f9fd-46997` -> `ts-basic-service`."""
    name = pod.strip()
    stripped = _POD_HASHES.sub("", name)
    if stripped != name:
        return stripped
    return _STATEFUL_ORDINAL.sub("", name)


def signature(paths: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """What the files are now (name, size, modification time): equal while none changed."""
    out = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))
