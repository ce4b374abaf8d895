"""Write the graph rows of the memories a write transaction changes.

``refresh.upsert_memory`` calls ``write_graph`` for every memory it writes:
the memory is collected in ``GraphRows``, and when the transaction's writer
flushes, each collected memory's keys and edges are extracted and written as
one ``graph_rows`` row (both as JSON, one ``executemany``; an updated
memory's row is replaced). Extracting at the flush, not between memories,
keeps a full build's lexical work and its graph work each on a warm CPU
cache: interleaved, the two slowed each other by about a third.
Deleting a memory row deletes its graph row (the foreign key cascades) and
drops its collected memory. Only the changed memory's row is touched:
references to it from other memories are resolved when read (edges point at
keys, not rows).
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
    """The memories written in one transaction, each extracted into its graph row at ``flush``."""

    def __init__(self) -> None:
        self._memories: dict[int, Memory] = {}

    def put(self, memory_id: int, memory: Memory) -> None:
        """Collect ``memory`` as row ``memory_id``, replacing any collected earlier in the transaction."""
        self._memories[memory_id] = memory

    def drop(self, memory_id: int) -> None:
        self._memories.pop(memory_id, None)

    def flush(self, conn: sqlite3.Connection) -> None:
        rows = []
        for memory_id, memory in self._memories.items():
            found = extract(memory)
            rows.append((memory_id, _ENCODE(found.keys), _ENCODE(found.edges)))  # a RawEdge is a tuple: a JSON array
        conn.executemany("INSERT OR REPLACE INTO graph_rows (memory_id, keys, edges) VALUES (?, ?, ?)", rows)
        self._memories.clear()


def write_graph(writer: PostingsWriter, memory_id: int, memory: Memory) -> None:
    """Replace the keys and edges of memory row ``memory_id`` with ``memory``'s when ``writer`` flushes."""
    rows = writer.pending.get("graph")
    if not isinstance(rows, GraphRows):
        rows = writer.pending["graph"] = GraphRows()
    rows.put(memory_id, memory)


def decode_keys(text: str) -> dict[str, str]:
    """A ``graph_rows.keys`` value: key -> label."""
    keys: dict[str, str] = json.loads(text)
    return keys


def decode_edges(text: str) -> list[EdgeRow]:
    """A ``graph_rows.edges`` value: (type, target key, label, line, detail) per edge, in the memory's order."""
    return [tuple(edge) for edge in json.loads(text)]
