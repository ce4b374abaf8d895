"""The index file: one SQLite database in WAL mode, shared safely by many processes.

The index is derived data, shared by every process that works on the same
memories root (servers, hooks, CLI calls). ``docs/architecture.md`` has the
rules this module keeps; in short:

- Creating, migrating and repairing the file happen under an exclusive lock
  on ``index.sqlite.lock``, so no process ever sees an index another is still
  building.
- Every open index holds a shared lock on ``index.sqlite.users`` for its
  whole life. Only a process that gets that lock exclusively (proof that no
  other process has the file open) may move a damaged file aside.
- Only real damage counts (``connection.is_damage``, a foreign file, a schema
  from a newer memrouter, a missing table); a busy database is waited for.
- When the file cannot be repaired now (others have it open) or the index
  folder is read-only, the process works on an in-memory index built from the
  files, and says so in ``warnings``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import time
from pathlib import Path

from memrouter.core.errors import IndexBusy, IndexCorrupt, StorageError
from memrouter.core.lazylog import LazyLogger
from memrouter.index.sqlite.connection import (
    DEFAULT_WRITE_WAIT,
    IndexConnection,
    begin_immediate,
    connect,
    error_name,
    is_busy,
    is_damage,
    storage_error,
    transaction,
)
from memrouter.index.sqlite.schema import MIGRATIONS, Migration, check, integrity_problems, migrate, schema_damaged

__all__ = [
    "IndexConnection",
    "IndexFile",
    "begin_immediate",
    "connect",
    "integrity_problems",
    "is_busy",
    "is_damage",
    "schema_damaged",
    "storage_error",
    "transaction",
]

log = LazyLogger(__name__)


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


def _ignore_in_git(folder: Path) -> None:
    """Give the state folder a ``.gitignore`` of ``*``: the index and live state never go into git."""
    ignore = folder / ".gitignore"
    if ignore.exists():
        return
    try:
        with open(ignore, "x", encoding="utf-8") as handle:
            handle.write("# memrouter's index and live state: rebuilt or kept locally, never committed\n*\n")
    except FileExistsError:
        return  # another process wrote it first


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
            _ignore_in_git(path.parent)
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
            check(conn)
            migrate(conn, self.migrations)
        except (IndexCorrupt, sqlite3.DatabaseError) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.DatabaseError) and not is_damage(exc):
                name = error_name(exc)
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
            migrate(conn, self.migrations)
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
        migrate(conn, self.migrations, wal=False)
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
                check(source)
                source.backup(conn)
            finally:
                source.close()
            migrate(conn, self.migrations, wal=False)
        except (IndexCorrupt, sqlite3.Error) as exc:
            log.info("cannot copy the read-only index %s (%s); starting empty", self.path, exc)
            conn.close()
            conn = connect(":memory:")
            migrate(conn, self.migrations, wal=False)
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
