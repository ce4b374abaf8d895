"""How often, and how lately, each memory was returned: counts kept beside the index, never in the files.

``get`` and ``search`` note the names they return in memory (``AccessLog.note``);
the notes reach the ``memory_access`` table of ``usage.sqlite`` (beside
``index.sqlite``) in one short transaction at most every ``FLUSH_SECONDS`` (or
``FLUSH_NAMES`` names), and when the router closes. A search therefore never
writes the index: a process that only reads closes its index without a
checkpoint. ``usage.sqlite`` is a plain rollback-journal database that never
waits for the disk (``synchronous = OFF``): the counts are usage, not knowledge,
so a crash may lose the last batch, and a damaged file is started again from
zero, as an index rebuilt from the files starts them. A flush that finds it busy
keeps its notes for the next one.

They feed two things: the janitor's report (never-accessed and stale memories)
and an optional ranking decay (``[janitor] decay``, off by default): a memory
idle for ``stale_days`` (since its last access, or since it was last indexed
if never accessed) loses up to ``decay`` of its score, half of it after one
``stale_days`` span; each doubling of its access count stretches that span.
"""

from __future__ import annotations

import math
import sqlite3

from memrouter.core.lazylog import LazyLogger
from memrouter.core.records import record, replace
from memrouter.index.fusion import Fused
from memrouter.index.sqlite.connection import is_damage

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

__all__ = [
    "FLUSH_NAMES", "FLUSH_SECONDS", "USAGE_FILE", "Access", "AccessLog", "UsageFile", "decay_factor", "usage_since",
]  # fmt: skip

FLUSH_SECONDS = 30.0
FLUSH_NAMES = 2000
# A flush waits at most this long for other writers (seconds); its notes wait for the next one otherwise.
FLUSH_WAIT = 0.2
DAY = 86400.0
USAGE_FILE = "usage.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_access (
    name TEXT PRIMARY KEY,
    count INTEGER NOT NULL DEFAULT 0,
    last_access REAL NOT NULL
) WITHOUT ROWID;
"""

log = LazyLogger(__name__)


@record
class Access:
    """One memory's use: how many times it was returned, and when last (epoch seconds; None if never)."""

    count: int = 0
    last: float | None = None


def usage_since(conn: sqlite3.Connection) -> float | None:
    """When this index began counting uses (its migration 0400 was applied, epoch seconds): a memory can be called
    unused only for what was watched."""
    row = conn.execute("SELECT applied_at FROM schema_migrations WHERE name = '0400_access_counts'").fetchone()
    return float(row[0]) if row else None


def decay_factor(access: Access, since: float, now: float, strength: float, stale_days: float) -> float:
    """The score multiplier for a memory idle since ``access.last`` (else ``since``): 1 - strength at most."""
    if strength <= 0:
        return 1.0
    idle_days = max(0.0, now - (access.last if access.last is not None else since)) / DAY
    span = stale_days * (1.0 + math.log2(1 + access.count))
    return 1.0 - strength * (1.0 - math.pow(0.5, idle_days / span))


class UsageFile:
    """``usage.sqlite``: the counts' own database, opened on first use (see the module docstring).

    ``path`` None keeps the counts in memory (an index in memory, or a folder that cannot be written).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            return self._connect(":memory:")
        try:
            return self._connect(str(self.path))
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                log.warning("usage counts in %s were damaged (%s); counting again from zero", self.path, exc)
                self.path.unlink(missing_ok=True)
                return self._connect(str(self.path))
            if isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc):
                log.warning("usage counts cannot be kept in %s (%s); counting in memory", self.path, exc)
                return self._connect(":memory:")
            raise

    @staticmethod
    def _connect(target: str) -> sqlite3.Connection:
        conn = sqlite3.connect(target, timeout=FLUSH_WAIT, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA synchronous = OFF")  # usage, not knowledge: never wait for the disk
        conn.executescript(_SCHEMA)
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class AccessLog:
    """Access notes of one router, held in memory and written in batches (see the module docstring)."""

    def __init__(self, usage: UsageFile) -> None:
        self.usage = usage
        self._pending: dict[str, list[float]] = {}  # name -> [count, last access]
        self._oldest: float | None = None

    @property
    def pending(self) -> int:
        """How many memories have notes not yet written."""
        return len(self._pending)

    def note(self, names: Iterable[str], now: float) -> bool:
        """Count one access of each name at ``now``; True when the batch is old or large enough to flush."""
        for name in names:
            entry = self._pending.setdefault(name, [0, now])
            entry[0] += 1
            entry[1] = max(entry[1], now)
        if self._pending and self._oldest is None:
            self._oldest = now
        return self._oldest is not None and (now - self._oldest >= FLUSH_SECONDS or len(self._pending) >= FLUSH_NAMES)

    def flush(self) -> bool:
        """Write the pending notes in one transaction; False (notes kept) when the counts stay busy."""
        if not self._pending:
            return True
        rows = [(name, int(count), last) for name, (count, last) in self._pending.items()]
        try:
            conn = self.usage.conn
            conn.execute("BEGIN IMMEDIATE")  # waits up to FLUSH_WAIT for another writer (the connection's timeout)
            try:
                conn.executemany(
                    "INSERT INTO memory_access (name, count, last_access) VALUES (?, ?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET count = count + excluded.count, "
                    "last_access = max(last_access, excluded.last_access)",
                    rows,
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:  # busy, or a folder that cannot be written now
            log.warning("access counts not written yet: %s", exc)
            return False
        self._pending.clear()
        self._oldest = None
        return True

    def stats(self, names: Iterable[str] | None = None) -> dict[str, Access]:
        """The counts of ``names`` (every counted memory when None), pending notes included."""
        conn = self.usage.conn
        wanted = None if names is None else list(dict.fromkeys(names))
        if wanted is None:
            cursor = conn.execute("SELECT name, count, last_access FROM memory_access")
        elif not wanted:
            return {}
        else:
            marks = ", ".join("?" * len(wanted))
            cursor = conn.execute(f"SELECT name, count, last_access FROM memory_access WHERE name IN ({marks})", wanted)
        found = {row[0]: Access(int(row[1]), float(row[2])) for row in cursor}
        for name, (count, last) in self._pending.items():
            if wanted is None or name in found or name in wanted:
                old = found.get(name, Access())
                found[name] = Access(old.count + int(count), max(old.last or last, last))
        return found

    def decayed(
        self, conn: sqlite3.Connection, fused: list[Fused], now: float, strength: float, stale_days: float
    ) -> list[Fused]:
        """``fused`` with each score times its decay factor, best first (unchanged when ``strength`` is 0)."""
        if strength <= 0 or not fused:
            return fused
        ids = [item.memory_id for item in fused]
        marks = ", ".join("?" * len(ids))
        rows = {
            row[0]: (row[1], row[2])
            for row in conn.execute(f"SELECT id, name, indexed_at FROM memories WHERE id IN ({marks})", ids)
        }
        stats = self.stats([name for name, _ in rows.values()])
        rescored = []
        for item in fused:
            name, since = rows.get(item.memory_id, ("", now))
            factor = decay_factor(stats.get(name, Access()), since, now, strength, stale_days)
            rescored.append(replace(item, score=round(item.score * factor, 6)))
        return sorted(rescored, key=lambda item: -item.score)
