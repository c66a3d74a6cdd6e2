"""Where rcabot keeps its record: a SQLite file (the embedded default) or PostgreSQL (when
`RCABOT_DB` is a `postgresql://` URL, for several bot replicas and workers), behind one small
interface, with versioned migrations.

The stores (storage.investigations, .schedules, .alerts, .repair_memory) write portable SQL
with `?` placeholders; this module runs it on either engine. What differs is kept here: the
placeholder style, an auto-numbered key's type, how a duplicate key and a lost connection are
reported (`Conflict`, `Unavailable`), and how two processes migrating at once are serialised.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

_TYPES = {
    "sqlite": {"serial": "integer primary key autoincrement", "float": "real", "int": "integer", "text": "text"},
    "postgresql": {"serial": "bigserial primary key", "float": "double precision", "int": "bigint", "text": "text"},
}


class StorageError(Exception):
    """A storage failure a caller can report."""


class Conflict(StorageError):
    """A row with that key exists already (either engine's unique-key violation)."""


class Unavailable(StorageError):
    """The database cannot be reached or used right now."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One versioned change of a store's tables; `{serial}`, `{float}`, `{int}`, `{text}` in
    its statements become each engine's type."""

    version: int
    statements: tuple[str, ...]


def is_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def record(target: str) -> Path | str:
    """Where the record is, as the user wrote it: a postgresql:// URL, or a SQLite file's path."""
    return target if is_url(target) else Path(target)


def open_database(target: str | Path) -> Database:
    """A SQLite file (a path) or PostgreSQL (a postgresql:// URL)."""
    if is_url(target):
        return PostgresDatabase(str(target))
    return SqliteDatabase(Path(target))


class Database:
    """One connection, shared between threads (one statement or transaction at a time)."""

    dialect = ""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    # each engine provides these
    def _run(self, sql: str, args: Sequence[Any]) -> tuple[int, list[dict[str, Any]]]:
        raise NotImplementedError

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        raise NotImplementedError
        yield  # pragma: no cover

    def close(self) -> None:
        raise NotImplementedError

    def _serialise_migrations(self) -> None:
        """Make a second process that migrates at the same time wait for this one."""

    # the interface the stores use
    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; the rows it changed."""
        with self._lock:
            return self._run(sql, args)[0]

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return self._run(sql, args)[1]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Statements inside commit together or not at all."""
        with self._lock, self._transaction():
            yield

    def insert(self, table: str, row: dict[str, Any]) -> None:
        """Insert one row; `Conflict` when its key exists."""
        cols = ", ".join(_quote(c) for c in row)
        self.execute(f"insert into {table} ({cols}) values ({', '.join('?' * len(row))})", list(row.values()))

    def migrate(self, component: str, migrations: Sequence[Migration]) -> int:
        """Apply a store's migrations not applied yet, each in its own transaction; its version."""
        types = _TYPES[self.dialect]
        with self.transaction():
            self._serialise_migrations()  # two processes creating one table at once collide
            self._run("create table if not exists schema_migrations (component text primary key, version integer)", [])
        version = 0
        for m in sorted(migrations, key=lambda m: m.version):
            with self.transaction():
                self._serialise_migrations()
                rows = self._run("select version from schema_migrations where component = ?", [component])[1]
                version = int(rows[0]["version"]) if rows else 0
                if m.version <= version:
                    continue
                for statement in m.statements:
                    self._run(statement.format(**types), [])
                if rows:
                    self._run("update schema_migrations set version = ? where component = ?", [m.version, component])
                else:
                    self._run(
                        "insert into schema_migrations (component, version) values (?, ?)", [component, m.version]
                    )
                version = m.version
        return version


def _quote(column: str) -> str:
    """Column names quoted: `user` is reserved in PostgreSQL."""
    return f'"{column}"'


class SqliteDatabase(Database):
    """A WAL-mode SQLite file (through sqlite-utils); a new file is owner-only, since what
    rcabot keeps quotes telemetry and names services."""

    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=self.BUSY_SECONDS)
        self._db = sqlite_utils.Database(conn)
        if new:
            os.chmod(path, 0o600)
        self._wal()
        self._depth = 0

    BUSY_SECONDS = 10.0  # another process's write: wait this long, not fail

    def _wal(self) -> None:
        """Switch the file to WAL once; SQLite may refuse the switch at once (without its busy
        wait) while another process opens the same new file, so the switch is retried."""
        deadline = time.monotonic() + self.BUSY_SECONDS
        while True:
            try:
                if self._db.conn.execute("pragma journal_mode").fetchone()[0].lower() != "wal":
                    self._db.conn.execute("pragma journal_mode = wal")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise Unavailable(f"the SQLite file {self.path.name} cannot be used: {exc}") from exc
                time.sleep(0.02)

    def _run(self, sql: str, args: Sequence[Any]) -> tuple[int, list[dict[str, Any]]]:
        try:
            cursor = self._db.conn.execute(sql, list(args))
        except sqlite3.IntegrityError as exc:
            raise Conflict(str(exc)) from exc
        except sqlite3.OperationalError as exc:
            raise Unavailable(f"the SQLite file {self.path.name} cannot be used: {exc}") from exc
        if cursor.description is None:
            return cursor.rowcount, []
        names = [d[0] for d in cursor.description]
        return cursor.rowcount, [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._depth:  # nested: part of the transaction already open
            yield
            return
        self._db.conn.execute("begin immediate")  # take the write lock now: no upgrade deadlock
        self._depth = 1
        try:
            yield
        except BaseException:
            self._db.conn.execute("rollback")
            raise
        else:
            self._db.conn.execute("commit")
        finally:
            self._depth = 0

    def close(self) -> None:
        with self._lock:  # not while another thread is inside a query: that would crash sqlite
            self._db.close()


class PostgresDatabase(Database):
    """PostgreSQL through psycopg; a lost connection is reopened on the next call, and a call
    that cannot reach the server raises `Unavailable`."""

    dialect = "postgresql"
    CONNECT_TIMEOUT = 3  # seconds: a storage that does not answer is reported, not waited on

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self._conn: Any = None
        self._in_transaction = False
        self._connect()

    def _connect(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg.connect(
                    self.url, autocommit=True, row_factory=dict_row, connect_timeout=self.CONNECT_TIMEOUT
                )
            except psycopg.OperationalError as exc:
                self._conn = None
                raise Unavailable(f"PostgreSQL cannot be reached: {_first_line(exc)}") from exc
        return self._conn

    def _run(self, sql: str, args: Sequence[Any]) -> tuple[int, list[dict[str, Any]]]:
        import psycopg

        conn = self._connect()
        try:
            cursor = conn.execute(_placeholders(sql), list(args))
        except psycopg.errors.UniqueViolation as exc:
            raise Conflict(_first_line(exc)) from exc
        except psycopg.OperationalError as exc:
            if not self._in_transaction:
                self._drop()
            raise Unavailable(f"PostgreSQL failed: {_first_line(exc)}") from exc
        rows = cursor.fetchall() if cursor.description is not None else []
        return cursor.rowcount, rows

    def _drop(self) -> None:
        if self._conn is not None:
            with suppress(Exception):  # already broken: nothing more to release
                self._conn.close()
        self._conn = None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        import psycopg

        if self._in_transaction:
            yield
            return
        conn = self._connect()
        self._in_transaction = True
        try:
            with conn.transaction():
                yield
        except psycopg.OperationalError as exc:
            self._drop()
            raise Unavailable(f"PostgreSQL failed: {_first_line(exc)}") from exc
        except Unavailable:
            self._drop()
            raise
        finally:
            self._in_transaction = False

    def _serialise_migrations(self) -> None:
        self._run("select pg_advisory_xact_lock(?)", [0x7263_6162])  # "rcab": held until the commit

    def close(self) -> None:
        with self._lock:
            self._drop()


_MARK = re.compile(r"\?")


def _placeholders(sql: str) -> str:
    """`?` placeholders as psycopg's `%s` (the stores' SQL holds no literal `?` or `%`)."""
    return _MARK.sub("%s", sql)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
