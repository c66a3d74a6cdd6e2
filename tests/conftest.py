"""Shared fixtures: the real slices that ship with the repo, the full datasets when present, and
the record's two engines (every storage test runs on a SQLite file and on PostgreSQL: the
server this kind of machine runs on 127.0.0.1, or `RCABOT_TEST_POSTGRES`; each test gets a
schema of its own; without a server the PostgreSQL half skips, except under CI, where it fails)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "bot" / "demo"
NEZHA_SLICE = DEMO / "nezha-trainticket"
PETSHOP_SLICE = ROOT / "tests" / "data" / "petshop"
SHARED = ROOT.parent / "shared" / "datasets"


@pytest.fixture()
def nezha_slice() -> Path:
    return NEZHA_SLICE


@pytest.fixture()
def petshop_slice() -> Path:
    return PETSHOP_SLICE


@pytest.fixture()
def shared_datasets() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared/datasets is not beside the repo")
    return SHARED


def monitoring(*, alertmanager: bool = False) -> None:
    """Skip without Debian's prometheus (and alertmanager), except under CI, where it fails."""
    from lab.alerting import alertmanager_binary
    from lab.processes import binaries

    if binaries() is None or (alertmanager and alertmanager_binary() is None):
        what = "prometheus and prometheus-alertmanager" if alertmanager else "prometheus"
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Debian's {what}: scripts/ensure-prometheus.sh installs them")
        pytest.skip(f"{what} is not installed here (scripts/ensure-prometheus.sh)")


SERVER = os.environ.get("RCABOT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def _admin() -> object:
    import psycopg

    try:
        return psycopg.connect(SERVER, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable under CI: {exc}")
        pytest.skip(f"PostgreSQL is not reachable: {exc}")


@pytest.fixture()
def postgres_url() -> Iterator[str]:
    """A URL whose connections see only a fresh schema."""
    conn = _admin()
    schema = f"rcabot_test_{uuid.uuid4().hex[:12]}"
    conn.execute(f"create schema {schema}")  # type: ignore[attr-defined]
    try:
        yield f"{SERVER}?options={quote(f'-csearch_path={schema}')}"
    finally:
        conn.execute(f"drop schema {schema} cascade")  # type: ignore[attr-defined]
        conn.close()  # type: ignore[attr-defined]


@pytest.fixture(params=["sqlite", "postgresql"])
def record(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store keeps its rows: a SQLite file's path or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "bot.db")
    return str(request.getfixturevalue("postgres_url"))
