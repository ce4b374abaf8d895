"""Write the graph rows of the memories a write transaction changes.

``refresh.upsert_memory`` calls ``write_graph`` for every memory it writes:
an updated memory's old edges and keys are deleted at once, its new ones are
collected in ``GraphRows`` and inserted together when the transaction's
writer flushes (one ``executemany`` per table, as the postings are written).
Deleting a memory row deletes its edges and keys (foreign keys cascade) and
drops its collected rows. Only the changed memory's rows are touched:
references to it from other memories are resolved when read (edges point at
keys, not rows).
"""

from __future__ import annotations

import sqlite3

from memrouter.index.graph_extract import extract
from memrouter.index.postings import PendingRows, PostingsWriter
from memrouter.model import Memory

__all__ = ["GraphRows", "write_graph"]

KeyRow = tuple[str, int, str]
EdgeRow = tuple[int, str, str, str, int, str | None]


class GraphRows(PendingRows):
    """The keys and edges collected per memory row in one transaction, inserted at ``flush``."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[list[KeyRow], list[EdgeRow]]] = {}

    def put(self, memory_id: int, keys: list[KeyRow], edges: list[EdgeRow]) -> None:
        """Collect ``memory_id``'s rows, replacing any collected earlier in the transaction."""
        self._rows[memory_id] = (keys, edges)

    def drop(self, memory_id: int) -> None:
        self._rows.pop(memory_id, None)

    def flush(self, conn: sqlite3.Connection) -> None:
        rows = self._rows.values()
        conn.executemany(
            "INSERT OR IGNORE INTO graph_keys (key, memory_id, label) VALUES (?, ?, ?)",
            [row for keys, _ in rows for row in keys],
        )
        conn.executemany(
            "INSERT INTO graph_edges (memory_id, type, target, label, line, detail) VALUES (?, ?, ?, ?, ?, ?)",
            [row for _, edges in rows for row in edges],
        )
        self._rows.clear()


def write_graph(
    conn: sqlite3.Connection, writer: PostingsWriter, memory_id: int, memory: Memory, *, new: bool = False
) -> int:
    """Replace the edges and keys of memory row ``memory_id`` (``new``: a row just inserted, holding none)."""
    found = extract(memory)
    if not new:
        conn.execute("DELETE FROM graph_edges WHERE memory_id = ?", (memory_id,))
        conn.execute("DELETE FROM graph_keys WHERE memory_id = ?", (memory_id,))
    rows = writer.pending.get("graph")
    if not isinstance(rows, GraphRows):
        rows = writer.pending["graph"] = GraphRows()
    rows.put(
        memory_id,
        [(key, memory_id, label) for key, label in found.keys.items()],
        [(memory_id, e.type, e.key, e.label, e.line, e.detail) for e in found.edges],
    )
    return len(found.edges)
