"""Write one memory's graph rows, inside the write transaction that writes its row.

``refresh.upsert_memory`` calls ``write_graph`` for every memory it writes;
deleting a memory row deletes its edges and keys (foreign keys cascade).
Only the changed memory's rows are touched: references to it from other
memories are resolved when read (edges point at keys, not rows).
"""

from __future__ import annotations

import sqlite3

from memrouter.index.graph_extract import extract
from memrouter.model import Memory

__all__ = ["write_graph"]


def write_graph(conn: sqlite3.Connection, memory_id: int, memory: Memory, *, new: bool = False) -> int:
    """Replace the edges and keys of memory row ``memory_id`` (``new``: a row just inserted, holding none)."""
    found = extract(memory)
    if not new:
        conn.execute("DELETE FROM graph_edges WHERE memory_id = ?", (memory_id,))
        conn.execute("DELETE FROM graph_keys WHERE memory_id = ?", (memory_id,))
    conn.executemany(
        "INSERT OR IGNORE INTO graph_keys (key, memory_id, label) VALUES (?, ?, ?)",
        [(key, memory_id, label) for key, label in found.keys.items()],
    )
    conn.executemany(
        "INSERT INTO graph_edges (memory_id, type, target, label, line, detail) VALUES (?, ?, ?, ?, ?, ?)",
        [(memory_id, e.type, e.key, e.label, e.line, e.detail) for e in found.edges],
    )
    return len(found.edges)
