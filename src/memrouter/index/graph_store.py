"""Write the graph rows of the memories a write transaction changes.

``refresh.upsert_memory`` calls ``write_graph`` for every memory it writes:
its keys and edges become one ``graph_rows`` row (both as JSON), collected in
``GraphRows`` and written together when the transaction's writer flushes (one
``executemany``, as the postings are written; an updated memory's row is
replaced). Deleting a memory row deletes its graph row (the foreign key
cascades) and drops its collected one. Only the changed memory's row is
touched: references to it from other memories are resolved when read (edges
point at keys, not rows).
"""

from __future__ import annotations

import json
import sqlite3

from memrouter.index.graph_extract import extract
from memrouter.index.postings import PendingRows, PostingsWriter
from memrouter.model import Memory

__all__ = ["GraphRows", "decode_edges", "decode_keys", "write_graph"]

# One edge as stored: (type, target key, label, line, detail).
EdgeRow = tuple[str, str, str, int, str | None]
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


class GraphRows(PendingRows):
    """The graph row collected per memory row in one transaction, written at ``flush``."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[str, str]] = {}

    def put(self, memory_id: int, keys: str, edges: str) -> None:
        """Collect ``memory_id``'s row, replacing any collected earlier in the transaction."""
        self._rows[memory_id] = (keys, edges)

    def drop(self, memory_id: int) -> None:
        self._rows.pop(memory_id, None)

    def flush(self, conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO graph_rows (memory_id, keys, edges) VALUES (?, ?, ?)",
            [(memory_id, keys, edges) for memory_id, (keys, edges) in self._rows.items()],
        )
        self._rows.clear()


def write_graph(writer: PostingsWriter, memory_id: int, memory: Memory) -> int:
    """Replace the keys and edges of memory row ``memory_id`` when ``writer`` flushes; returns the edge count."""
    found = extract(memory)
    rows = writer.pending.get("graph")
    if not isinstance(rows, GraphRows):
        rows = writer.pending["graph"] = GraphRows()
    rows.put(memory_id, _ENCODE(found.keys), _ENCODE(found.edges))  # a RawEdge is a tuple: a JSON array
    return len(found.edges)


def decode_keys(text: str) -> dict[str, str]:
    """A ``graph_rows.keys`` value: key -> label."""
    keys: dict[str, str] = json.loads(text)
    return keys


def decode_edges(text: str) -> list[EdgeRow]:
    """A ``graph_rows.edges`` value: (type, target key, label, line, detail) per edge, in the memory's order."""
    return [tuple(edge) for edge in json.loads(text)]
