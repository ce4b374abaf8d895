"""The knowledge graph in the local index: each memory's keys and edges written with it, and read whole.

``refresh.upsert_memory`` calls ``write_graph`` for every memory it writes:
the memory is collected in ``GraphRows``, its keys and edges are extracted
with the next batch of collected memories, and each becomes one
``graph_rows`` row (both as JSON, ``memrouter.index.graph.codec``) written
when the transaction's writer flushes (one ``executemany``; an updated
memory's row is replaced). Extracting a batch at a time, not between
memories, keeps a full build's lexical work and its graph work each on a
warm CPU cache: interleaved, the two slowed each other by about a third.
Deleting a memory row deletes its graph row (the foreign key cascades) and
drops its collected memory. Only the changed memory's row is touched:
references to it from other memories are resolved when read (edges point at
keys, not rows). ``GraphCache`` reads the whole graph once per index
generation, so a warm traversal never touches SQLite.
"""

from __future__ import annotations

import sqlite3

from memrouter.core.model import PENDING, Memory
from memrouter.index.graph.codec import encode
from memrouter.index.graph.extract import extract
from memrouter.index.graph.view import GraphView
from memrouter.index.sqlite.postings import PendingRows, PostingsWriter

__all__ = ["GraphCache", "GraphRows", "read_graph", "write_graph"]


class GraphRows(PendingRows):
    """The memories written in one transaction, extracted into their graph rows ``BATCH`` at a time
    (so a large build holds at most ``BATCH`` memories, not all of them) and written at ``flush``."""

    BATCH = 1024

    def __init__(self) -> None:
        self._memories: dict[int, Memory] = {}
        self._rows: dict[int, tuple[str, str]] = {}

    def put(self, memory_id: int, memory: Memory) -> None:
        """Collect ``memory`` as row ``memory_id``, replacing any collected earlier in the transaction."""
        self._rows.pop(memory_id, None)
        self._memories[memory_id] = memory
        if len(self._memories) >= self.BATCH:
            self._extract()

    def drop(self, memory_id: int) -> None:
        self._memories.pop(memory_id, None)
        self._rows.pop(memory_id, None)

    def flush(self, conn: sqlite3.Connection) -> None:
        self._extract()
        conn.executemany(
            "INSERT OR REPLACE INTO graph_rows (memory_id, keys, edges) VALUES (?, ?, ?)",
            [(memory_id, keys, edges) for memory_id, (keys, edges) in self._rows.items()],
        )
        self._rows.clear()

    def _extract(self) -> None:
        for memory_id, memory in self._memories.items():
            found = extract(memory)
            self._rows[memory_id] = (encode(found.keys), encode(found.edges))  # a RawEdge is a tuple: a JSON array
        self._memories.clear()


def write_graph(writer: PostingsWriter, memory_id: int, memory: Memory) -> None:
    """Replace the keys and edges of memory row ``memory_id`` with ``memory``'s when ``writer`` flushes."""
    rows = writer.pending.get("graph")
    if not isinstance(rows, GraphRows):
        rows = writer.pending["graph"] = GraphRows()
    rows.put(memory_id, memory)


def read_graph(conn: sqlite3.Connection) -> GraphView:
    """The graph of the local index ``conn`` (memories pending review left out)."""
    return GraphView(
        conn.execute("SELECT id, name, valid_from, valid_until FROM memories WHERE status != ?", (PENDING,)),
        conn.execute("SELECT memory_id, keys, edges FROM graph_rows ORDER BY memory_id"),
    )


class GraphCache:
    """The local index's graph, read again only when the index generation changes."""

    def __init__(self) -> None:
        self._view: GraphView | None = None
        self._generation: str | None = None

    def view(self, conn: sqlite3.Connection) -> GraphView:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        generation = row[0] if row else ""
        if self._view is None or generation != self._generation:
            self._view = read_graph(conn)
            self._generation = generation
        return self._view
