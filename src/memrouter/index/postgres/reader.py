"""A project's rows in PostgreSQL (``[index] url``) as an ``IndexReader``, and the step that keeps them in step.

Lexical BM25F and pgvector dense search run in the database
(``memrouter.index.postgres.store``); the knowledge graph's calls and
retriever read the project's graph rows. Every candidate is named by the
local index's row id (the rows hold the same names), so fusion, hits and the
graph work as over the local index. The reader only reads: ``sync`` pushes
what changed in the local index (which follows the files) and is run by the
workspace's freshness step, before a read (``memrouter.index.postgres.mirror``).
An unreachable database is ``BackendUnavailable``; ``memrouter.index.fallback``
answers from the local index meanwhile.
"""

from __future__ import annotations

from memrouter.config.settings import redacted_url
from memrouter.core.errors import ConfigError
from memrouter.core.records import replace
from memrouter.index.fusion import Ranked
from memrouter.index.graph.view import GraphView
from memrouter.index.postgres.connect import Database
from memrouter.index.postgres.mirror import local_mark, push
from memrouter.index.postgres.scope import ProjectScope
from memrouter.index.postgres.store import PgIndex
from memrouter.index.sqlite import queries
from memrouter.index.text import query_terms

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path
    from typing import Any

    from memrouter.core.model import Filters, MemorySummary
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.index.sqlite.keeper import IndexKeeper

__all__ = ["PostgresReader", "publish"]


class PostgresReader:
    """One project's rows in PostgreSQL, read for searches (see the module docstring).

    ``local``: the local index whose ids name the candidates and whose rows are pushed; ``root``: where the
    memory files are (the rows hold paths relative to it); ``shared``: pools shared with the other
    workspaces of this process (``serve --projects``), else this reader opens its own.
    """

    def __init__(
        self, url: str, project: str, local: IndexKeeper, root: Path, *, ef_search: int | None = None,
        shared: SharedDatabases | None = None,
    ) -> None:  # fmt: skip
        if not url:
            raise ConfigError("no database configured: set [index] url or MEMROUTER_DATABASE_URL")
        self.url = url
        self.project = project
        self.local = local
        self.root = root
        self.ef_search = ef_search
        self._shared = shared
        self._store: PgIndex | None = None
        self._pushed: str | None = None  # the local index's mark when this process last pushed
        # The graph read from the database, with the rows' generation and the local mark it was read at.
        self._graph: tuple[tuple[int, str], GraphView] | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        return self.local.conn

    def _rows(self) -> PgIndex:
        """The project's rows through the pool (a new pool after ``reset``)."""
        if self._shared is not None and self._store is not None and not self._shared.holds(self._store.database):
            self._store = None  # another workspace renewed the shared pool after a failure: use the new one
        if self._store is None:
            database = self._shared.get(self.url) if self._shared is not None else Database(self.url)
            self._store = PgIndex(database, self.project, ef_search=self.ef_search)
        return self._store

    # -- the step that keeps the rows in step (``Mirrored``) -------------------
    def sync(self) -> None:
        """Push what changed in the local index since this process last pushed (nothing when nothing did)."""
        mark = local_mark(self.conn)
        if mark == self._pushed:
            return
        scope = self._rows().scope
        if scope.mark() != mark:  # another process of this local index may have pushed it already
            push(self.conn, scope)
        self._pushed = mark

    def reset(self) -> None:
        """After a failure: drop the pool (the next use connects afresh) and push again once it is back."""
        self._pushed = None
        self._graph = None
        if self._store is not None:
            if self._shared is not None:
                self._shared.discard(self._store.database)
            else:
                self._store.database.close()
            self._store = None

    # -- ``IndexReader`` ---------------------------------------------------
    def lexical(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        found = self._rows().lexical(query_terms(query), filters, limit, self._within(filters), share=self._share())
        return self._numbered([(name, score, None, None) for name, score in found])

    def dense(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        dense = self.local.dense
        if not dense.has_vectors(self.conn):  # the rows hold the local index's vectors: none there, none here
            return []
        vector = dense.embed_query(query).tolist()
        found = self._rows().dense(vector, dense.model_id, filters, limit, self._within(filters), share=self._share())
        return self._numbered([(hit.name, hit.score, hit.detail, hit.offset) for hit in found])

    def graph_view(self) -> GraphView:
        """The project's graph from its rows, its memories numbered as in the local index (one the local
        index lacks gets a negative number); read again when the rows or the local index change."""
        rows = self._rows()
        key = (rows.generation(), local_mark(self.conn))
        if self._graph is None or self._graph[0] != key:
            self._graph = (key, _numbered_view(rows.graph_rows(), self.conn))
        return self._graph[1]

    def summaries(self, filters: Filters) -> list[MemorySummary]:

        return [replace(summary, path=str(self.root / summary.path)) for summary in self._rows().summaries(filters)]

    def status(self) -> dict[str, object] | None:
        return self.describe() | {"available": True, "memories": self._rows().count()}

    def describe(self) -> dict[str, object]:
        """Which database and project, for ``status`` (the URL without its password)."""

        return {"url": redacted_url(self.url), "project": self.project}

    def close(self) -> None:
        if self._store is not None and self._shared is None:  # a shared pool is closed by its owner
            self._store.database.close()
        self._store = None

    # -- one id space ------------------------------------------------------
    def _within(self, filters: Filters) -> list[str] | None:
        """A time window's memories by name (``filters.within`` holds local row ids)."""
        return None if filters.within is None else queries.names_of(self.conn, filters.within)

    def _share(self) -> float:
        """What a folder's overview lends its memories: the rows hold the local index's names, so alike."""
        folders = self.local.lexical.folders(self.conn)
        return folders.share if folders else 0.0

    def _numbered(self, found: list[tuple[str, float, str | None, int | None]]) -> list[Ranked]:
        ids = queries.ids_of(self.conn, sorted({name for name, *_ in found}))
        return [Ranked(ids[name], score, detail, offset) for name, score, detail, offset in found if name in ids]


def _numbered_view(rows: list[tuple[str, str | None, str | None, str, str]], conn: sqlite3.Connection) -> GraphView:
    """A ``GraphView`` of ``PgIndex.graph_rows``, each memory numbered by its row in the local index ``conn``
    and taken in that order (so both stores list ties alike); the local index's unknowns last, numbered below 0."""
    ids = queries.ids_of(conn, [row[0] for row in rows])
    unknown = iter(range(-1, -len(rows) - 1, -1))
    numbered = [(ids[row[0]] if row[0] in ids else next(unknown), *row) for row in rows]
    numbered.sort(key=lambda row: (row[0] < 0, abs(row[0])))
    return GraphView(
        ((mid, name, start, end) for mid, name, start, end, _, _ in numbered),
        ((mid, keys, edges) for mid, _, _, _, keys, edges in numbered),
    )


def publish(conn: sqlite3.Connection, url: str | None, project: str) -> dict[str, Any]:
    """Push the local index ``conn`` to the database ``url`` as ``project``'s rows; what changed."""
    if not url:
        raise ConfigError("no database given: use --database URL, [index] url or MEMROUTER_DATABASE_URL")
    database = Database(url)
    try:
        return push(conn, ProjectScope(database, project)).to_dict()
    finally:
        database.close()
