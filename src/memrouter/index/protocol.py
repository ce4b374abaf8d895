"""The one interface between a search and whatever holds the index.

The search pipeline (``memrouter.index.search``) is written once over
``IndexReader``; the local SQLite index (``memrouter.index.sqlite.reader``),
a project's rows in PostgreSQL (``memrouter.index.postgres.reader``), the
fallback that wraps PostgreSQL with the local index
(``memrouter.index.fallback``) and the in-memory fake of the tests
(``memrouter.testing.memory_index``) implement it. Every candidate is named by
the local index's row id, whatever store found it: one id space for fusion,
hits and the graph.

A reader only reads. An index that is a copy of the local one (PostgreSQL)
also offers ``Mirrored.sync``, the step that brings it in step; the
workspace runs it with the local index's own refresh, before a read, never
inside one.
"""

from __future__ import annotations

from typing import Protocol

TYPE_CHECKING = False  # only type checkers and the tests import this module
if TYPE_CHECKING:
    from memrouter.core.model import Filters, MemorySummary
    from memrouter.index.fusion import Ranked
    from memrouter.index.graph.view import GraphView

__all__ = ["IndexReader", "Mirrored"]


class IndexReader(Protocol):
    """What a search, a listing and the graph calls read from an index.

    Each retriever returns at most ``limit`` candidates, best first, with ``filters`` applied inside it
    (so a filter never empties the pool). ``BackendUnavailable`` when the store cannot be reached.
    """

    def lexical(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        """The best memories for ``query`` by BM25F over name, title, tags and body."""
        ...

    def dense(self, query: str, filters: Filters, limit: int) -> list[Ranked]:
        """The memories whose best chunk is nearest ``query``'s embedding (none while no vectors exist)."""
        ...

    def graph_view(self) -> GraphView:
        """The knowledge graph, its memories numbered as the local index numbers them."""
        ...

    def summaries(self, filters: Filters) -> list[MemorySummary]:
        """The memories passing ``filters``, by name."""
        ...

    def status(self) -> dict[str, object] | None:
        """This store's part of ``status`` (None: the local index, which reports itself)."""
        ...

    def close(self) -> None:
        """Let go of what the reader holds (a connection pool)."""
        ...


class Mirrored(Protocol):
    """An index that copies the local one: ``sync`` pushes what changed since its last push."""

    def sync(self) -> None:
        """Bring the copy in step with the local index (nothing when nothing changed)."""
        ...
