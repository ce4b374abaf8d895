"""The local SQLite index as an ``IndexReader``: the retrievers over the index file this process keeps fresh."""

from __future__ import annotations

from memrouter.index.sqlite import queries

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.core.model import Filters, MemorySummary
    from memrouter.index.fusion import Ranked
    from memrouter.index.graph.view import GraphView
    from memrouter.index.sqlite.keeper import IndexKeeper

__all__ = ["SqliteReader"]


class SqliteReader:
    """Reads the local index through its keeper (use it inside ``keeper.indexed``, as every read is)."""

    def __init__(self, keeper: IndexKeeper) -> None:
        self.keeper = keeper

    def lexical(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        return self.keeper.lexical.search(self.keeper.conn, query, filters, limit=limit)

    def dense(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        keeper = self.keeper
        conn = keeper.conn
        return keeper.dense.search(
            conn, query, filters, limit, passing=keeper.lexical.allowed, folders=keeper.lexical.folders(conn)
        )

    def graph_view(self) -> GraphView:
        return self.keeper.graph_view()

    def summaries(self, filters: Filters) -> list[MemorySummary]:
        return queries.summaries(self.keeper.conn, filters)

    def status(self) -> dict[str, object] | None:
        return None  # the local index reports itself (``IndexKeeper.status``)

    def close(self) -> None:
        """Nothing: the keeper owns the index file."""
