"""The index database: one SQLite file in WAL mode, built by named migrations.

The index is derived data, shared by every process that works on the same
memories root (servers, hooks, CLI calls). ``docs/architecture.md`` has the
rules this module keeps; in short:

- Creating, migrating and repairing the file happen under an exclusive lock
  on ``index.sqlite.lock``, so no process ever sees an index another is still
  building.
- Every open index holds a shared lock on ``index.sqlite.users`` for its
  whole life. Only a process that gets that lock exclusively (proof that no
  other process has the file open) may move a damaged file aside.
- Only real damage counts: ``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, a file that
  is not ours or a schema from a newer memrouter. A busy or locked database is
  waited for (``begin_immediate``), never rebuilt.
- When the file cannot be repaired now (others have it open) or the index
  folder is read-only, the process works on an in-memory index built from the
  files, and says so in ``warnings``.

Other modules add their tables by registering migrations (``MIGRATIONS``);
each runs once, in order, and is recorded by name.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memrouter.errors import IndexBusy, IndexCorrupt, StorageError
from memrouter.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "APPLICATION_ID",
    "IndexConnection",
    "IndexFile",
    "MIGRATIONS",
    "Migration",
    "begin_immediate",
    "connect",
    "is_busy",
    "is_damage",
    "storage_error",
    "transaction",
]

log = LazyLogger(__name__)

# "MRTR": marks the file as a memrouter index (PRAGMA application_id).
APPLICATION_ID = 0x4D525452
# How long a statement waits inside SQLite for a lock (reads rarely wait in WAL mode).
BUSY_TIMEOUT_MS = 5000
# ``BEGIN IMMEDIATE`` waits in short slices, so each wait is counted and jittered.
BEGIN_SLICE_MS = 50
# How long a write waits for the write lock in all, by default (seconds).
DEFAULT_WRITE_WAIT = 30.0


@dataclass(frozen=True, slots=True)
class Migration:
    """A named, ordered schema step: SQL text or a function of the connection."""

    name: str
    apply: str | Callable[[sqlite3.Connection], None]


class IndexConnection(sqlite3.Connection):
    """An index connection that counts how often its writes waited for another process."""

    busy_waits: int = 0
    write_wait: float = DEFAULT_WRITE_WAIT


_CORE = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    channel TEXT NOT NULL,
    kind TEXT,
    scope TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT,
    author TEXT,
    confidence REAL NOT NULL DEFAULT 1.0,
    verified_by TEXT,
    created TEXT,
    updated TEXT,
    valid_from TEXT,
    valid_until TEXT,
    supersedes TEXT,
    superseded_by TEXT,
    expires TEXT,
    anchors TEXT NOT NULL DEFAULT '[]',
    extra TEXT NOT NULL DEFAULT '{}',
    problems TEXT NOT NULL DEFAULT '[]',
    body TEXT NOT NULL DEFAULT '',
    length REAL NOT NULL DEFAULT 0,
    terms TEXT NOT NULL DEFAULT '',
    indexed_at REAL NOT NULL
);
CREATE INDEX memories_channel ON memories(channel);
CREATE INDEX memories_kind ON memories(kind);
CREATE TABLE memory_tags (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (memory_id, tag)
) WITHOUT ROWID;
CREATE INDEX memory_tags_tag ON memory_tags(tag);
CREATE TABLE terms (term TEXT PRIMARY KEY, postings BLOB NOT NULL) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('generation', '0');
"""

# Chunk embeddings for dense retrieval (see memrouter.index.dense).
_DENSE = """
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    memory_hash TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    heading TEXT NOT NULL,
    model TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX chunks_memory ON chunks(memory_id, model);
CREATE INDEX chunks_model ON chunks(model);
"""

# Covering indexes for the two whole-table reads a fresh process makes before its
# first search (the stat comparison of a refresh, BM25 length norms): scanning
# them reads a few pages instead of every memory's body.
_COVERING = """
CREATE INDEX memories_stat ON memories(name, mtime_ns, size, hash);
CREATE INDEX memories_length ON memories(length);
"""


def _checked_postings(conn: sqlite3.Connection) -> None:
    """Postings blobs gain a CRC-32 trailer: rebuild them all from the memory rows."""
    from memrouter.index.refresh import rebuild_postings

    rebuild_postings(conn)


def _epoch(conn: sqlite3.Connection) -> None:
    """A random id for this index file: caches keyed on the generation counter
    must not match the files of an index that was deleted and rebuilt."""
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', ?)", (os.urandom(8).hex(),))


MIGRATIONS: list[Migration] = [
    Migration("0001_memories_and_postings", _CORE),
    Migration("0002_dense_chunks", _DENSE),
    Migration("0003_covering_indexes", _COVERING),
    Migration("0004_checked_postings", _checked_postings),
    Migration("0005_index_epoch", _epoch),
]

# Sync state per external backend (see memrouter.sync.state for how it is used).
_SYNC_STATE = """
CREATE TABLE sync_state (
    backend TEXT NOT NULL,
    name TEXT NOT NULL,
    hash TEXT NOT NULL DEFAULT '',
    remote_ids TEXT NOT NULL DEFAULT '[]',
    synced_at REAL,
    pending TEXT,
    PRIMARY KEY (backend, name)
) WITHOUT ROWID;
CREATE TABLE sync_remote (
    backend TEXT NOT NULL,
    remote_id TEXT NOT NULL,
    name TEXT NOT NULL,
    part INTEGER NOT NULL,
    PRIMARY KEY (backend, remote_id)
) WITHOUT ROWID;
CREATE INDEX sync_remote_name ON sync_remote(backend, name);
"""
MIGRATIONS.append(Migration("0100_sync_state", _SYNC_STATE))

# Tables every index must have; a missing one is damage (see ``schema_damaged``).
REQUIRED_TABLES = ("meta", "memories", "memory_tags", "terms", "chunks", "sync_state", "sync_remote")


# -- errors ------------------------------------------------------------------
def _error_name(exc: BaseException) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def is_busy(exc: BaseException) -> bool:
    """True for "database is locked/busy": wait and retry, never repair."""
    name = _error_name(exc)
    if name:
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def is_damage(exc: BaseException) -> bool:
    """True only for proven damage: ``SQLITE_CORRUPT*``, ``SQLITE_NOTADB`` or ``IndexCorrupt``."""
    if isinstance(exc, IndexCorrupt):
        return True
    name = _error_name(exc)
    return name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB"


def schema_damaged(conn: sqlite3.Connection) -> bool:
    """True when one of the index's own tables is missing (a "no such table" error's real cause)."""
    try:
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError:
        return True
    return not set(REQUIRED_TABLES) <= present


def storage_error(exc: BaseException, path: Path | str) -> StorageError:
    """The library's error for a SQLite error that is neither damage nor handled busy-ness."""
    if is_busy(exc):
        return IndexBusy(f"the index {path} is busy (other processes are writing to it); try again")
    name = _error_name(exc) or type(exc).__name__
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


def begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting for other writers with bounded, jittered retries.

    Each transaction that had to wait is counted in ``conn.busy_waits``; past
    ``conn.write_wait`` seconds in all, ``IndexBusy`` is raised.
    """
    wait = float(getattr(conn, "write_wait", DEFAULT_WRITE_WAIT))
    deadline = time.monotonic() + wait
    attempt = 0
    # The first attempt does not wait at all, so every write that had to wait is counted.
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if attempt == 0 and isinstance(conn, IndexConnection):
                    conn.busy_waits += 1
                    conn.execute(f"PRAGMA busy_timeout = {BEGIN_SLICE_MS}")
                if time.monotonic() >= deadline:
                    raise IndexBusy(
                        f"the index was locked by other processes for over {wait:.0f} s; try again"
                    ) from exc
                import random  # lazy: only contended writes need it

                time.sleep(random.uniform(0.001, min(0.005 * 2**attempt, 0.2)))
                attempt += 1
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


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


# -- schema --------------------------------------------------------------------
def _check(conn: sqlite3.Connection) -> None:
    """Raise ``IndexCorrupt`` unless the file is an empty database or one of ours."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if tables and app_id != APPLICATION_ID:
        raise IndexCorrupt("the file is a database, but not a memrouter index")


def _migrate(conn: sqlite3.Connection, migrations: list[Migration], *, wal: bool = True) -> None:
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    done: set[str] = set()
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").fetchone():
        done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    unknown = done - {m.name for m in migrations}
    if unknown:
        raise IndexCorrupt(f"written by a newer memrouter (unknown migrations: {', '.join(sorted(unknown))})")
    for migration in migrations:
        if migration.name in done:
            continue
        with transaction(conn):
            # Marked as ours in the same transaction as the first table, so no
            # reader ever sees a half-made index without its mark.
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            if callable(migration.apply):
                migration.apply(conn)
            else:
                for statement in _statements(migration.apply):
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (migration.name, time.time())
            )


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


# -- locks -------------------------------------------------------------------
def _flock(fd: int, operation: int, wait: float, what: str) -> None:
    """``flock`` with a deadline (polling: flock itself has no timeout)."""
    deadline = time.monotonic() + wait
    delay = 0.002
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise IndexBusy(f"{what} was held by another process for over {wait:.0f} s; try again") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def _try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


_READ_ONLY_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)


class IndexFile:
    """The index database of one memories root, shared safely by many processes.

    ``conn`` is the open connection; ``in_memory`` says whether this process
    fell back to an index in memory (``warnings`` says why). See the module
    docstring for the locking rules.
    """

    def __init__(
        self, path: Path, migrations: list[Migration] | None = None, *, write_wait: float = DEFAULT_WRITE_WAIT
    ) -> None:
        self.path = path
        self.migrations = MIGRATIONS if migrations is None else migrations
        self.write_wait = write_wait
        self.warnings: list[str] = []
        self.in_memory = False
        self.read_only = False
        self._lock_fd: int | None = None
        self._users_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self.conn: IndexConnection = self._open()

    # -- opening -------------------------------------------------------------
    def _open(self) -> IndexConnection:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self._side(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._users_fd = os.open(self._side(".users"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno not in _READ_ONLY_ERRNOS:
                raise StorageError(f"cannot open the index folder {path.parent}: {exc.strerror or exc}") from exc
            self._close_fds()
            return self._read_only_copy(f"the index folder {path.parent} is not writable ({exc.strerror})")
        assert self._lock_fd is not None
        _flock(self._lock_fd, fcntl.LOCK_EX, self.write_wait, f"the index lock {self._side('.lock')}")
        try:
            return self._open_locked()
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _open_locked(self) -> IndexConnection:
        """Open, check and migrate the file; repair it if damaged (the open lock is held)."""
        assert self._users_fd is not None
        conn: IndexConnection | None = None
        try:
            conn = connect(self.path)
            _check(conn)
            _migrate(conn, self.migrations)
        except (IndexCorrupt, sqlite3.DatabaseError) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.DatabaseError) and not is_damage(exc):
                name = _error_name(exc)
                if name.startswith(("SQLITE_READONLY", "SQLITE_PERM", "SQLITE_CANTOPEN")):
                    return self._read_only_copy(f"the index {self.path} cannot be written ({exc})")
                raise storage_error(exc, self.path) from exc
            conn = self._repair_locked(str(exc))
            if conn is None:
                return self._memory_index(
                    f"the index {self.path} is damaged ({exc}) but other processes have it open; "
                    "this process uses an index in memory until it can be rebuilt"
                )
        # Shared for as long as this connection lives: proof to a repairing
        # process that the file is in use. No one holds it exclusively now,
        # since that needs the open lock this process holds.
        fcntl.flock(self._users_fd, fcntl.LOCK_SH)
        stat = os.stat(self.path)
        self._inode = (stat.st_dev, stat.st_ino)
        self.in_memory = False
        conn.write_wait = self.write_wait
        return conn

    def _repair_locked(self, reason: str) -> IndexConnection | None:
        """Move the damaged file aside and start a new one, if no other process uses it."""
        assert self._users_fd is not None
        if not _try_flock(self._users_fd, fcntl.LOCK_EX):
            return None
        try:
            aside = self._move_aside()
            message = (
                f"index {self.path} was unusable ({reason}); moved to {aside.name} and rebuilt from the memory files"
                if aside is not None
                else f"index {self.path} was unusable ({reason}); rebuilt from the memory files"
            )
            log.warning(message)
            conn = connect(self.path)
            _migrate(conn, self.migrations)
            import json

            record = {"at": time.time(), "message": message, "moved_to": aside.name if aside else None}
            with transaction(conn):
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_repair', ?)", (json.dumps(record),)
                )
            self.warnings.append(message)
            return conn
        finally:
            fcntl.flock(self._users_fd, fcntl.LOCK_UN)

    def _move_aside(self) -> Path | None:
        path = self.path
        aside = None
        if path.exists():
            aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
            path.replace(aside)
        for suffix in ("-wal", "-shm", "-journal"):
            self._side(suffix).unlink(missing_ok=True)
        for old in path.parent.glob(f"{path.name}.corrupt-*"):
            if old != aside:  # only the newest damaged file is kept, for a post-mortem
                old.unlink(missing_ok=True)
        return aside

    def _memory_index(self, reason: str) -> IndexConnection:
        log.warning(reason)
        self.warnings.append(reason)
        conn = connect(":memory:")
        _migrate(conn, self.migrations, wal=False)
        conn.write_wait = self.write_wait
        self.in_memory = True
        return conn

    def _read_only_copy(self, reason: str) -> IndexConnection:
        """Work from a copy of the file in memory: reads as it is, writes go nowhere."""
        self.read_only = True
        conn = self._memory_index(f"{reason}: searching a copy in memory; changes are not saved to the index")
        if not self.path.is_file():
            return conn
        try:
            source = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
            try:
                _check(source)
                source.backup(conn)
            finally:
                source.close()
            _migrate(conn, self.migrations, wal=False)
        except (IndexCorrupt, sqlite3.Error) as exc:
            log.info("cannot copy the read-only index %s (%s); starting empty", self.path, exc)
            conn.close()
            conn = connect(":memory:")
            _migrate(conn, self.migrations, wal=False)
        conn.write_wait = self.write_wait
        return conn

    # -- repair during use -----------------------------------------------------
    def recover(self, exc: BaseException) -> None:
        """Answer damage found during use: rebuild the file if this is its last user, else go in memory.

        Another process may already have rebuilt it; then this one just opens
        the new file.
        """
        if self.in_memory:
            if self.read_only:
                raise StorageError(f"the in-memory copy of the index failed: {exc}") from exc
            self.conn.close()
            self.conn = self._memory_index(f"the in-memory index failed ({exc}); started again")
            return
        self.conn.close()
        assert self._lock_fd is not None and self._users_fd is not None
        fcntl.flock(self._users_fd, fcntl.LOCK_UN)
        _flock(self._lock_fd, fcntl.LOCK_EX, self.write_wait, f"the index lock {self._side('.lock')}")
        try:
            if self._same_file():
                conn = self._repair_locked(str(exc))
                if conn is None:
                    self.conn = self._memory_index(
                        f"the index {self.path} is damaged ({exc}) but other processes have it open; "
                        "this process uses an index in memory until it can be rebuilt"
                    )
                    return
                conn.close()
            self.conn = self._open_locked()
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _same_file(self) -> bool:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (stat.st_dev, stat.st_ino) == self._inode

    # -- the rest ----------------------------------------------------------------
    def _side(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    def last_repair(self) -> dict[str, object] | None:
        """What the last repair of this file did (any process's), or None."""
        import json

        row = self.conn.execute("SELECT value FROM meta WHERE key = 'last_repair'").fetchone()
        return dict(json.loads(row[0])) if row else None

    def kept_corrupt(self) -> list[str]:
        """The damaged files kept beside the index (newest first)."""
        try:
            found = list(self.path.parent.glob(f"{self.path.name}.corrupt-*"))
        except OSError:
            return []
        return [p.name for p in sorted(found, key=lambda p: p.name, reverse=True)]

    def close(self) -> None:
        self.conn.close()
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._lock_fd, self._users_fd):
            if fd is not None:
                os.close(fd)  # closing drops this process's flock
        self._lock_fd = self._users_fd = None


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check``'s findings (empty when the file is sound)."""
    rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(20)")]
    return [] if rows == ["ok"] else rows


def iter_memory_rows(conn: sqlite3.Connection) -> Iterator[sqlite3.Row]:
    """Every memory row with the fields lexical terms are made from."""
    yield from conn.execute("SELECT id, name, title, tags, body FROM memories ORDER BY id")
