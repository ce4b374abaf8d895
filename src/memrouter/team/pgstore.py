"""The team channel in PostgreSQL (``[index] url``): one database shared by every machine of a team.

The operations are those of ``team.sqlite`` (``memrouter.team.sql``); each
runs in one transaction that first names its project and the schema of the
per-project views (``memrouter.index.postgres.schema_team``), the one place a team
statement is scoped. Writes hold the project's advisory lock, so they follow
one another as ``BEGIN IMMEDIATE`` makes them on SQLite (a compare-and-set
never loses an update); the changes of one task (claim, renew, complete,
fail) hold it shared and lock only their task's row (a claim: ``FOR UPDATE
SKIP LOCKED``), so agents on many machines claim and complete side by side
and each task goes to exactly one of them. Reads see one snapshot.

Team state is live, not derived from the files, so it has one home: when
PostgreSQL is configured and cannot be reached, every team operation fails
with ``BackendUnavailable`` saying so; nothing is written to a local
``team.sqlite`` meanwhile (two stores would split the team in two).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from memrouter.core.errors import BackendUnavailable, InvalidInput
from memrouter.index.postgres.connect import Database, redacted
from memrouter.index.postgres.schema_team import TEAM_SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    import psycopg

__all__ = ["PgConn", "PgTeamStore"]

T = TypeVar("T")
# A transaction PostgreSQL rolled back (a deadlock between two claims, a serialisation failure) is run again.
ATTEMPTS = 5
POOL_SIZE = 8


class PgRow:
    """One row, by column name or position (as ``sqlite3.Row``)."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = values

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._names[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _row_maker(cursor: Any) -> Callable[[Sequence[Any]], PgRow]:
    names = {column.name: number for number, column in enumerate(cursor.description or ())}
    return lambda values: PgRow(names, values)


class PgConn:
    """One PostgreSQL transaction as the team operations use a connection (``sql.Conn``)."""

    postgres = True

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        cursor = self._conn.cursor(row_factory=_row_maker)
        cursor.execute(sql.replace("?", "%s").encode(), tuple(parameters))
        return cursor

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        rows = [tuple(row) for row in parameters]
        cursor = self._conn.cursor()
        if rows:
            cursor.executemany(sql.replace("?", "%s").encode(), rows)
        return cursor


class PgTeamStore:
    """One project's team channel in a PostgreSQL database (see the module docstring)."""

    path = None

    def __init__(self, url: str, project: str) -> None:
        if not isinstance(project, str) or not 0 < len(project) <= 200:
            raise InvalidInput("a project key must be 1 to 200 characters")
        self.project = project
        self.busy_waits = 0
        try:
            self.database = Database(url, max_size=POOL_SIZE)
        except BackendUnavailable as exc:
            raise BackendUnavailable(self._down(url, exc)) from exc

    @property
    def location(self) -> str:
        return f"{redacted(self.database.url)} (project {self.project!r})"

    @staticmethod
    def _down(url: str, exc: Exception) -> str:
        return (
            f"the team channel is in PostgreSQL at {redacted(url)} ([index] url), which cannot be reached: {exc}. "
            "Team state is live and has no copy elsewhere, so nothing was done (no local team.sqlite is used "
            "while a database is configured); try again when the database is back"
        )

    def _run(self, work: Callable[[PgConn], T], lock: str | None) -> T:
        from psycopg.errors import TransactionRollback

        for attempt in range(ATTEMPTS):
            try:
                with self.database.connection() as conn, conn.transaction():
                    if lock is None:
                        conn.execute(b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    # One round trip: the project, the schema of its views, and the lock (none for a read).
                    locking = f", {lock}(hashtext('memrouter-team:' || %s))" if lock else ""
                    conn.execute(
                        f"SELECT set_config('memrouter.project', %s, true), set_config('search_path', %s, true)"
                        f"{locking}".encode(),
                        (self.project, TEAM_SCHEMA, self.project) if lock else (self.project, TEAM_SCHEMA),
                    )
                    return work(PgConn(conn))
            except BackendUnavailable as exc:
                if isinstance(exc.__cause__, TransactionRollback) and attempt + 1 < ATTEMPTS:
                    self.busy_waits += 1
                    continue
                raise BackendUnavailable(self._down(self.database.url, exc)) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def write(self, change: Callable[[PgConn], T], *, shared: bool = False) -> T:
        """Run ``change`` in one transaction holding the project's write lock (``shared``: a change of one task)."""
        return self._run(change, "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock")

    def read(self, query: Callable[[PgConn], T]) -> T:
        """Run ``query`` on one snapshot."""
        return self._run(query, None)

    def close(self) -> None:
        self.database.close()
