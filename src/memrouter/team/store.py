"""``team.sqlite``: the team channel's own database, shared by every process of a project.

Live state, not derived: it has its own schema and migrations, separate from
the index, and an index rebuild never touches it. The file is in WAL mode;
every change is one short ``BEGIN IMMEDIATE`` transaction that waits for
other writers with the index's bounded, jittered retries
(``memrouter.index.sqlite.connection.begin_immediate``), so a busy database is
waited for and never surfaces as "database is locked". A connection is used
by one thread at a time (a lock), so a server's worker threads can share it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from memrouter.core.errors import StorageError
from memrouter.index.sqlite.connection import (
    DEFAULT_WRITE_WAIT,
    IndexConnection,
    connect,
    enable_wal,
    storage_error,
    transaction,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TeamStore"]

T = TypeVar("T")

# Named migrations, applied in order; ``PRAGMA user_version`` counts those applied.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_team_channel",
        """
        CREATE TABLE workflows (
            id TEXT PRIMARY KEY, name TEXT NOT NULL, owner TEXT, state TEXT NOT NULL,
            started_at REAL NOT NULL, completed_at REAL, summary TEXT, log TEXT);
        CREATE TABLE agents (
            id TEXT PRIMARY KEY, workflow_id TEXT, capabilities TEXT NOT NULL, status TEXT NOT NULL,
            message TEXT, registered_at REAL NOT NULL, heartbeat_at REAL NOT NULL, ttl REAL NOT NULL);
        CREATE INDEX agents_workflow ON agents (workflow_id);
        CREATE TABLE variables (
            key TEXT PRIMARY KEY, value TEXT NOT NULL, version INTEGER NOT NULL, owner TEXT,
            workflow_id TEXT, updated_at REAL NOT NULL, expires_at REAL);
        CREATE INDEX variables_workflow ON variables (workflow_id);
        CREATE TABLE tasks (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, workflow_id TEXT, title TEXT NOT NULL,
            payload TEXT, priority INTEGER NOT NULL, requires TEXT NOT NULL, state TEXT NOT NULL,
            owner TEXT, agent TEXT, lease_expires_at REAL, attempts INTEGER NOT NULL,
            max_attempts INTEGER NOT NULL, result TEXT, error TEXT,
            created_at REAL NOT NULL, updated_at REAL NOT NULL);
        CREATE INDEX tasks_queue ON tasks (state, priority DESC, seq);
        CREATE INDEX tasks_lease ON tasks (state, lease_expires_at);
        CREATE INDEX tasks_workflow ON tasks (workflow_id);
        CREATE TABLE task_deps (
            task_id TEXT NOT NULL, depends_on TEXT NOT NULL, PRIMARY KEY (task_id, depends_on)) WITHOUT ROWID;
        CREATE TABLE handoffs (
            id TEXT PRIMARY KEY, workflow_id TEXT, from_agent TEXT NOT NULL, to_agent TEXT NOT NULL,
            context TEXT NOT NULL, task_id TEXT, state TEXT NOT NULL, created_at REAL NOT NULL,
            responded_at REAL, reason TEXT);
        CREATE INDEX handoffs_to ON handoffs (to_agent, state);
        CREATE INDEX handoffs_workflow ON handoffs (workflow_id);
        CREATE TABLE reservations (
            id TEXT PRIMARY KEY, workflow_id TEXT, agent TEXT NOT NULL, paths TEXT NOT NULL,
            exclusive INTEGER NOT NULL, reason TEXT, created_at REAL NOT NULL, expires_at REAL NOT NULL);
        CREATE INDEX reservations_agent ON reservations (agent);
        CREATE INDEX reservations_workflow ON reservations (workflow_id);
        """,
    ),
    (
        # where each agent works (its branch and worktree), and where a handoff's sender worked
        "0002_agent_places",
        """
        ALTER TABLE agents ADD COLUMN branch TEXT;
        ALTER TABLE agents ADD COLUMN worktree TEXT;
        ALTER TABLE handoffs ADD COLUMN branch TEXT;
        ALTER TABLE handoffs ADD COLUMN worktree TEXT;
        """,
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)


class TeamStore:
    """One open ``team.sqlite``: ``write`` runs a function in one ``BEGIN IMMEDIATE`` transaction."""

    def __init__(self, path: Path, *, write_wait: float = DEFAULT_WRITE_WAIT) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the folder of {path}: {exc.strerror or exc}") from exc
        try:
            self.conn: IndexConnection = connect(path)
            self.conn.write_wait = write_wait
            enable_wal(self.conn)
            # WAL with NORMAL survives a process crash; only a power loss may drop the last commits.
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _error(self, exc: sqlite3.Error) -> StorageError:
        error = storage_error(exc, self.path)
        return type(error)(str(error).replace("the index", "the team channel", 1))

    def _migrate(self) -> None:
        with transaction(self.conn):
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StorageError(
                    f"{self.path} has schema version {version}, newer than this memrouter knows "
                    f"({SCHEMA_VERSION}); upgrade memrouter"
                )
            for _name, sql in MIGRATIONS[version:]:
                for statement in sql.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
            if version < SCHEMA_VERSION:
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def busy_waits(self) -> int:
        """How many transactions of this connection had to wait for another process."""
        return self.conn.busy_waits

    @property
    def location(self) -> str:
        return str(self.path)

    def write(self, change: Callable[[IndexConnection], T], *, shared: bool = False) -> T:
        """Run ``change`` in one ``BEGIN IMMEDIATE`` transaction (rolled back if it raises).

        ``shared`` changes nothing here: SQLite has no row locks, so a claim is one writer among the others.
        """
        with self._lock:
            try:
                with transaction(self.conn):
                    return change(self.conn)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def read(self, query: Callable[[IndexConnection], T]) -> T:
        """Run ``query`` on one consistent snapshot (a deferred transaction)."""
        with self._lock:
            try:
                self.conn.execute("BEGIN")
                try:
                    return query(self.conn)
                finally:
                    self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def close(self) -> None:
        with self._lock:
            self.conn.close()
