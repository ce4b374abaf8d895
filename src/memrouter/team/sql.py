"""What the team channel's operations need of a database connection, and the few lines that differ by engine.

The operations (``agents``, ``tasks``, ...) are written once, in SQL that
SQLite and PostgreSQL both run, against a ``Conn``: ``team.sqlite``'s
connection, or ``pgstore.PgConn`` over one PostgreSQL transaction, which
binds ``?`` parameters and sees the tables through the project's views. The
one place that differs in kind is the task claim: on PostgreSQL it locks the
chosen row and skips rows other claims hold (``FOR UPDATE SKIP LOCKED``), so
claims of one project run side by side.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

__all__ = ["Conn", "Row", "Storage", "is_postgres", "ready_task"]

T = TypeVar("T")

# A row: read by column name (``row["id"]``) or position (``row[0]``).
Row = Any


class Conn(Protocol):
    """The part of ``sqlite3.Connection`` the operations use (``?`` parameters; rows by name or position)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...


class Storage(Protocol):
    """Where the team channel lives: ``store.TeamStore`` (``team.sqlite``) or ``pgstore.PgTeamStore``."""

    @property
    def location(self) -> str:
        """The file, or the database (password hidden) and project, for messages."""
        ...

    @property
    def busy_waits(self) -> int:
        """How many transactions had to wait for (or be run again after) another process's."""
        ...

    def write(self, change: Callable[[Conn], T], *, shared: bool = False) -> T:
        """Run ``change`` in one transaction that no other write of the project overlaps.

        ``shared``: a change of task rows alone (claim, renew, complete, fail),
        which may overlap other such changes where the store locks rows
        (PostgreSQL); it locks the rows it changes first.
        """
        ...

    def read(self, query: Callable[[Conn], T]) -> T:
        """Run ``query`` on one consistent snapshot."""
        ...

    def close(self) -> None: ...


def is_postgres(conn: Conn) -> bool:
    return bool(getattr(conn, "postgres", False))


_READY = (
    "SELECT t.id, t.requires FROM tasks AS t WHERE t.state = 'queued' AND NOT EXISTS ("
    " SELECT 1 FROM task_deps AS d JOIN tasks AS x ON x.id = d.depends_on"
    " WHERE d.task_id = t.id AND x.state != 'done')"
)


def ready_task(conn: Conn, have: set[str], task_id: str | None = None) -> str | None:
    """The best queued task whose dependencies are done and whose required capabilities are in ``have``
    (``task_id`` only, when given).

    On PostgreSQL the row is locked until the transaction ends and rows other
    claims hold are skipped: two claims never choose the same task and never
    wait for each other.
    """
    only, named = (" AND t.id = ?", (task_id,)) if task_id is not None else ("", ())
    if is_postgres(conn):
        row = conn.execute(
            f"{_READY}{only} AND t.requires::jsonb <@ ?::jsonb ORDER BY t.priority DESC, t.seq "
            "LIMIT 1 FOR UPDATE OF t SKIP LOCKED",
            (*named, json.dumps(sorted(have))),
        ).fetchone()
        return None if row is None else str(row[0])
    ready = conn.execute(f"{_READY}{only} ORDER BY t.priority DESC, t.seq", named)
    chosen = next((str(row[0]) for row in ready if set(json.loads(row[1])) <= have), None)
    ready.close()
    return chosen
