"""The bridge's memory of what it mirrored: ``<index dir>/claude-flow.sqlite``.

One row per mirrored thing: ``kind`` (task, var, agent, handoff, inbound),
its local ``key``, the ``remote`` id on claude-flow's side and the ``hash``
of the state last written there (the base of a three-way comparison: which
side changed since). It is derived state: lost, it is rebuilt by the next
sync (tasks are found again by their ``memrouter-task:<id>`` tag, values are
compared afresh), so nothing is duplicated.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["Ledger", "LEDGER_FILE", "Entry"]

LEDGER_FILE = "claude-flow.sqlite"
Entry = tuple[str | None, str | None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mirrored (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    remote TEXT,
    hash TEXT,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mirrored_remote ON mirrored (kind, remote);
"""


class Ledger:
    """A small SQLite table; each write commits at once (a crash loses at most the write in flight)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def get(self, kind: str, key: str) -> Entry | None:
        """``(remote, hash)`` of a mirrored thing, or None."""
        row = self._conn.execute("SELECT remote, hash FROM mirrored WHERE kind = ? AND key = ?", (kind, key)).fetchone()
        return None if row is None else (row[0], row[1])

    def by_remote(self, kind: str, remote: str) -> str | None:
        """The local key mirrored as ``remote``."""
        row = self._conn.execute("SELECT key FROM mirrored WHERE kind = ? AND remote = ?", (kind, remote)).fetchone()
        return None if row is None else str(row[0])

    def all(self, kind: str) -> dict[str, Entry]:
        rows = self._conn.execute("SELECT key, remote, hash FROM mirrored WHERE kind = ?", (kind,))
        return {key: (remote, hash_) for key, remote, hash_ in rows}

    def put(self, kind: str, key: str, remote: str | None, hash_: str | None) -> None:
        self._conn.execute(
            "INSERT INTO mirrored (kind, key, remote, hash) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, key) DO UPDATE SET remote = excluded.remote, hash = excluded.hash",
            (kind, key, remote, hash_),
        )

    def drop(self, kind: str, key: str) -> None:
        self._conn.execute("DELETE FROM mirrored WHERE kind = ? AND key = ?", (kind, key))
