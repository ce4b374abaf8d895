"""Write the graph rows of the memories a write transaction changes.

``refresh.upsert_memory`` calls ``write_graph`` for every memory it writes:
the memory is collected in ``GraphRows``, its keys and edges are extracted
with the next batch of collected memories, and each becomes one
``graph_rows`` row (both as JSON) written when the transaction's writer
flushes (one ``executemany``; an updated memory's row is replaced).
Extracting a batch at a time, not between memories, keeps a full build's
lexical work and its graph work each on a warm CPU cache: interleaved, the
two slowed each other by about a third.
Deleting a memory row deletes its graph row (the foreign key cascades) and
drops its collected memory. Only the changed memory's row is touched:
references to it from other memories are resolved when read (edges point at
keys, not rows).
"""

from __future__ import annotations

import json
import sqlite3

from memrouter.core.model import Memory
from memrouter.index.graph.extract import extract
from memrouter.index.sqlite.postings import PendingRows, PostingsWriter

__all__ = ["GraphRows", "decode_edges", "decode_keys", "write_graph"]

# One edge as stored: (type, target key, label, line, detail).
EdgeRow = tuple[str, str, str, int, str | None]
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


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
            self._rows[memory_id] = (_ENCODE(found.keys), _ENCODE(found.edges))  # a RawEdge is a tuple: a JSON array
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
