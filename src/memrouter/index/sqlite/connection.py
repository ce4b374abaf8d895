"""Index connections: settings, busy waits, transactions, and which SQLite errors are which.

The one rule that matters between processes: a busy or locked database is
waited for (``begin_immediate``: bounded, jittered retries, each wait
counted), never mistaken for damage; only ``SQLITE_CORRUPT``,
``SQLITE_NOTADB`` and ``IndexCorrupt`` are damage (``is_damage``).
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from memrouter.core.errors import IndexBusy, IndexCorrupt, StorageError
from memrouter.core.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DEFAULT_WRITE_WAIT",
    "IndexConnection",
    "begin_immediate",
    "connect",
    "enable_wal",
    "error_name",
    "is_busy",
    "is_damage",
    "snapshot",
    "storage_error",
    "transaction",
]

log = LazyLogger(__name__)

# How long a statement waits inside SQLite for a lock (reads rarely wait in WAL mode).
BUSY_TIMEOUT_MS = 5000
# ``BEGIN IMMEDIATE`` waits in short slices, so each wait is counted and jittered.
BEGIN_SLICE_MS = 50
# How long a write waits for the write lock in all, by default (seconds).
DEFAULT_WRITE_WAIT = 30.0


class IndexConnection(sqlite3.Connection):
    """An index connection that counts how often its writes waited for another process."""

    busy_waits: int = 0
    write_wait: float = DEFAULT_WRITE_WAIT


# -- errors ------------------------------------------------------------------
def error_name(exc: BaseException) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def is_busy(exc: BaseException) -> bool:
    """True for "database is locked/busy": wait and retry, never repair."""
    name = error_name(exc)
    if name:
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def is_damage(exc: BaseException) -> bool:
    """True only for proven damage: ``SQLITE_CORRUPT*``, ``SQLITE_NOTADB`` or ``IndexCorrupt``."""
    if isinstance(exc, IndexCorrupt):
        return True
    name = error_name(exc)
    return name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB"


def storage_error(exc: BaseException, path: Path | str) -> StorageError:
    """The library's error for a SQLite error that is neither damage nor handled busy-ness."""
    if is_busy(exc):
        return IndexBusy(f"the index {path} is busy (other processes are writing to it); try again")
    name = error_name(exc) or type(exc).__name__
    if name.startswith(("SQLITE_READONLY", "SQLITE_PERM", "SQLITE_CANTOPEN")):
        return StorageError(f"the index {path} cannot be written ({exc}); check the index folder's permissions")
    if name.startswith("SQLITE_FULL"):
        return StorageError(f"the disk holding the index {path} is full")
    return StorageError(f"the index {path} failed: {exc} ({name})")


# -- connections and transactions -------------------------------------------
def connect(path: Path | str, *, uri: bool = False) -> IndexConnection:
    """Open a connection with the settings every index connection uses."""
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False,
        factory=IndexConnection, uri=uri,
    )  # fmt: skip
    assert isinstance(conn, IndexConnection)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA cache_size = -32768")  # 32 MiB: index builds touch many pages
    return conn


def enable_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, retried while other processes opening the same new file hold it.

    SQLite may refuse the switch with "database is locked" at once, without its busy handler (another
    connection is switching the file or recovering its log), so the first processes to open a new
    database at the same moment retry it as a contended write is retried (``_until_free``).
    """
    _until_free(conn, "PRAGMA journal_mode = WAL")


def begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting for other writers with bounded, jittered retries.

    Each transaction that had to wait is counted in ``conn.busy_waits``; past
    ``conn.write_wait`` seconds in all, ``IndexBusy`` is raised.
    """

    def waiting() -> None:
        if isinstance(conn, IndexConnection):
            conn.busy_waits += 1
            conn.execute(f"PRAGMA busy_timeout = {BEGIN_SLICE_MS}")

    # The first attempt does not wait at all, so every write that had to wait is counted.
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        _until_free(conn, "BEGIN IMMEDIATE", waiting)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _until_free(conn: sqlite3.Connection, statement: str, first_wait: Callable[[], None] | None = None) -> None:
    """Run ``statement``, retrying "database is locked" with jittered sleeps (``first_wait`` runs before the
    first); past ``conn.write_wait`` seconds in all, ``IndexBusy``."""
    wait = float(getattr(conn, "write_wait", DEFAULT_WRITE_WAIT))
    deadline = time.monotonic() + wait
    attempt = 0
    while True:
        try:
            conn.execute(statement)
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if attempt == 0 and first_wait is not None:
                first_wait()
            if time.monotonic() >= deadline:
                raise IndexBusy(
                    f"{_database_of(conn)} was locked by other processes for over {wait:.0f} s; try again"
                ) from exc
            import random  # lazy: only contended writes need it

            time.sleep(random.uniform(0.001, min(0.005 * 2**attempt, 0.2)))
            attempt += 1


def _database_of(conn: sqlite3.Connection) -> str:
    """The file behind ``conn``, for messages (``the database`` when in memory)."""
    try:
        row = conn.execute("PRAGMA database_list").fetchone()
    except sqlite3.Error:
        return "the database"
    return f"the database {row[2]}" if row and row[2] else "the database"


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction: every read inside sees the same state of the database, whatever other
    processes commit meanwhile (WAL). Inside a transaction already, that transaction's."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # nothing was written


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on any error)."""
    begin_immediate(conn)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:  # the error being raised says more than this one
            log.info("rollback failed: %s", exc)
        raise
