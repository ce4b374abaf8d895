"""Search and listing from the PostgreSQL index (``[index] url``), the local index as the fallback.

``PgSearch`` is ``CanonicalSearch`` with the candidates and listings coming
from the project's rows in PostgreSQL (``memrouter.index.postgres``): lexical BM25F
and pgvector dense search run in the database, and fusion, time phrases,
recency and hits work as over the local index; the knowledge graph's calls
and retriever read the project's graph rows. Before it reads, a search
pushes what changed in the local index (which follows the files) to the
database, so the rows follow the files. When PostgreSQL cannot be reached,
the search runs over the local index instead, with a warning (``Router.warnings``),
and the rows catch up on the first search after it is back. Writes always go
to the files; nothing here writes a memory.
"""

from __future__ import annotations

import builtins
import time
from dataclasses import dataclass, replace
from typing import Any

from memrouter.core.errors import BackendUnavailable, ConfigError
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import Filters, MemorySummary
from memrouter.index.fusion import Ranked
from memrouter.index.postgres.connect import Database
from memrouter.index.postgres.mirror import local_mark, push
from memrouter.index.postgres.scope import ProjectScope
from memrouter.index.postgres.shared import SharedDatabases
from memrouter.index.postgres.store import PgIndex
from memrouter.index.search import CanonicalSearch
from memrouter.index.sqlite import queries
from memrouter.index.text import query_terms

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3

    from memrouter.index.graph.read import GraphView

__all__ = ["RETRY_AFTER", "PgSearch", "publish"]

log = LazyLogger(__name__)

# After PostgreSQL failed, searches use the local index for this many seconds before trying it again
# (a try against a server that is down costs up to ``connect.POOL_WAIT``).
RETRY_AFTER = 30.0
_WAITING = "PostgreSQL failed moments ago"


@dataclass
class PgSearch(CanonicalSearch):
    """A router's search over its project's rows in PostgreSQL (see the module docstring)."""

    _store: PgIndex | None = None
    _pushed: str | None = None  # the local index's mark when this process last pushed
    _retry_at: float = 0.0
    _shared: SharedDatabases | None = None  # pools shared with other routers (``serve --projects``)
    # The graph read from the database, with the rows' generation and the local mark it was read at.
    _graph: tuple[tuple[int, str], GraphView] | None = None

    def store(self) -> PgIndex:
        """The project's rows, brought in step with the local index first."""
        if time.monotonic() < self._retry_at:
            raise BackendUnavailable(_WAITING)
        if self._shared is not None and self._store is not None and not self._shared.holds(self._store.database):
            self._store = None  # another router renewed the shared pool after a failure: use the new one
        if self._store is None:
            url = self.config.index.url
            if not url:
                raise ConfigError("no database configured: set [index] url or MEMROUTER_DATABASE_URL")
            database = self._shared.get(url) if self._shared is not None else Database(url)
            self._store = PgIndex(database, self.config.project_key, ef_search=self.config.index.ef_search)
        mark = local_mark(self.conn)
        if mark != self._pushed:
            if self._store.scope.mark() != mark:  # another process of this index may have copied it already
                push(self.conn, self._store.scope)
            self._pushed = mark
        return self._store

    def _fell_back(self, exc: BackendUnavailable) -> None:
        if str(exc) == _WAITING:
            return  # inside the wait after a failure: the wait must not grow with every search
        message = f"PostgreSQL index unavailable, searching the local index: {exc}"
        log.warning("%s", message)
        warnings = self.index.file.warnings
        if message not in warnings:
            warnings.append(message)
        self._pushed = None  # push again once it is back
        self._retry_at = time.monotonic() + RETRY_AFTER
        # A pool that lost its server backs off between reconnects: the next try starts a fresh one.
        if self._store is not None:
            if self._shared is not None:
                self._shared.discard(self._store.database)
            else:
                self._store.database.close()
            self._store = None

    def summaries(self, filters: Filters) -> builtins.list[MemorySummary]:
        try:
            listed = self.store().summaries(filters)
        except BackendUnavailable as exc:
            self._fell_back(exc)
            return super().summaries(filters)
        root = self.config.root
        return [replace(summary, path=str(root / summary.path)) for summary in listed]  # the path here

    def database_status(self) -> dict[str, object] | None:
        from memrouter.config.settings import redacted_url

        state: dict[str, object] = {
            "url": redacted_url(self.config.index.url or ""),
            "project": self.config.project_key,
        }
        try:
            state |= {"available": True, "memories": self.store().count()}
        except BackendUnavailable as exc:
            self._fell_back(exc)
            state |= {"available": False, "error": str(exc)}
        return state

    def close(self) -> None:
        if self._store is not None and self._shared is None:  # a shared pool is closed by its owner
            self._store.database.close()
        self._store = None

    def graph_view(self) -> GraphView:
        """The project's graph from its rows in the database, its memories numbered as in the local index
        (one the local index lacks gets a negative number); read again when the rows or the local index change."""
        try:
            store = self.store()
            key = (store.generation(), local_mark(self.conn))
            if self._graph is None or self._graph[0] != key:
                self._graph = (key, _numbered_view(store.graph_rows(), self.conn))
            return self._graph[1]
        except BackendUnavailable as exc:
            self._fell_back(exc)
            self._graph = None
            return super().graph_view()

    def _candidates(self, query: str, mode: str, filters: Filters, pool: int) -> dict[str, builtins.list[Ranked]]:
        try:
            lists = self._from_database(query, mode, filters, pool)
        except BackendUnavailable as exc:
            self._fell_back(exc)
            return super()._candidates(query, mode, filters, pool)
        if mode == "hybrid" and self.config.search.weights.get("graph", 0.0) > 0:  # it walks on from lexical's best
            lists["graph"] = self.index.graph.search(
                self.conn, query, filters, pool, self.index.lexical.allowed, lists["lexical"], view=self.graph_view()
            )
        return lists

    def _from_database(self, query: str, mode: str, filters: Filters, pool: int) -> dict[str, builtins.list[Ranked]]:
        store = self.store()
        within = None if filters.within is None else queries.names_of(self.conn, filters.within)
        # Folders are context: the rows hold the same names as the local index, so they lend alike.
        folders = self.index.lexical.folders(self.conn)
        share = folders.share if folders else 0.0
        found: dict[str, builtins.list[tuple[str, float, str | None, int | None]]] = {}
        if mode in ("hybrid", "lexical"):
            found["lexical"] = [
                (name, score, None, None)
                for name, score in store.lexical(query_terms(query), filters, pool, within, share=share)
            ]
        if mode in ("hybrid", "semantic"):
            dense = self.index.dense
            found["dense"] = []
            # The rows hold the local index's vectors: without any there, the query is not embedded either.
            if dense.has_vectors(self.conn):
                vector = dense.embed_query(query).tolist()
                found["dense"] = [
                    (hit.name, hit.score, hit.detail, hit.offset)
                    for hit in store.dense(vector, dense.model_id, filters, pool, within, share=share)
                ]
        ids = queries.ids_of(self.conn, sorted({item[0] for items in found.values() for item in items}))
        return {
            key: [Ranked(ids[name], score, detail, offset) for name, score, detail, offset in items if name in ids]
            for key, items in found.items()
        }


def _numbered_view(
    rows: builtins.list[tuple[str, str | None, str | None, str, str]], conn: sqlite3.Connection
) -> GraphView:
    """A ``GraphView`` of ``PgIndex.graph_rows``, each memory numbered by its row in the local index ``conn``
    and taken in that order (so both stores list ties alike); the local index's unknowns last, numbered below 0."""
    from memrouter.index.graph.read import GraphView

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
