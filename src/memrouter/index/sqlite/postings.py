"""Postings lists for lexical search, one row per term.

Each term's row holds a blob: the memory ids (int32) followed by their
weighted term frequencies (float32) and a CRC-32 of both, so damage inside a
blob (which SQLite's own checks cannot see) is found when it is read. One row
per term keeps index builds fast (tens of thousands of rows, not hundreds of
thousands) and lets a query fetch exactly the lists it needs. Changes are
collected per transaction and applied term by term in ``flush``.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from zlib import crc32

from memrouter.core.errors import IndexCorrupt

__all__ = ["PendingRows", "PostingsDamaged", "PostingsWriter", "checked", "decode", "encode"]

_BATCH = 500


class PostingsDamaged(IndexCorrupt):
    """A postings blob failed its length or checksum test (rebuilt from the memory rows)."""


def encode(postings: dict[int, float]) -> bytes:
    ids = array("i", postings.keys())
    tfs = array("f", postings.values())
    if sys.byteorder != "little":
        ids.byteswap()
        tfs.byteswap()
    data = ids.tobytes() + tfs.tobytes()
    return data + crc32(data).to_bytes(4, "little")


def checked(blob: bytes, term: str = "?") -> bytes:
    """The ids' and frequencies' bytes of one blob (little-endian int32s, then float32s), checked.

    ``PostingsDamaged`` if the blob fails its length or checksum test.
    """
    if len(blob) % 8 != 4:
        raise PostingsDamaged(f"postings of {term!r} have a bad length ({len(blob)} bytes)")
    data = blob[:-4]
    if crc32(data) != int.from_bytes(blob[-4:], "little"):
        raise PostingsDamaged(f"postings of {term!r} fail their checksum")
    return data


def decode(blob: bytes, term: str = "?") -> tuple[array[int], array[float]]:
    """The ids and term frequencies stored in one blob; ``PostingsDamaged`` if it fails its checks."""
    data = checked(blob, term)
    half = len(data) // 2
    ids = array("i")
    ids.frombytes(data[:half])
    tfs = array("f")
    tfs.frombytes(data[half:])
    if sys.byteorder != "little":
        ids.byteswap()
        tfs.byteswap()
    return ids, tfs


class PendingRows:
    """Other per-memory rows collected in the same transaction (the graph's), written at ``flush``.

    A base class, not a ``typing.Protocol``: lexical search imports this module and never ``typing``.
    """

    def drop(self, memory_id: int) -> None:
        """Forget the rows collected for ``memory_id`` (its row was deleted)."""
        raise NotImplementedError

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write the collected rows."""
        raise NotImplementedError


class PostingsWriter:
    """Collects postings changes inside one transaction; ``flush`` writes them.

    ``pending`` holds other collected rows by name (``memrouter.index.sqlite.graph``
    puts the graph's there), flushed with the postings and dropped with a memory.
    """

    def __init__(self) -> None:
        self._removed: dict[str, set[int]] = {}
        self._added: dict[str, dict[int, float]] = {}
        self.pending: dict[str, PendingRows] = {}

    def discard(self, memory_id: int) -> None:
        """A memory row is being deleted: rows collected for it must not be written."""
        for rows in self.pending.values():
            rows.drop(memory_id)

    def remove(self, memory_id: int, terms: list[str]) -> None:
        for term in terms:
            self._removed.setdefault(term, set()).add(memory_id)
            added = self._added.get(term)
            if added is not None:
                added.pop(memory_id, None)

    def add(self, memory_id: int, terms: dict[str, float]) -> None:
        for term, tf in terms.items():
            self._added.setdefault(term, {})[memory_id] = tf

    def flush(self, conn: sqlite3.Connection) -> None:
        """Apply the collected changes to the ``terms`` table, then write the pending rows."""
        for rows in self.pending.values():
            rows.flush(conn)
        self.pending.clear()
        touched = sorted(set(self._removed) | set(self._added))
        for start in range(0, len(touched), _BATCH):
            batch = touched[start : start + _BATCH]
            marks = ", ".join("?" * len(batch))
            current = dict(conn.execute(f"SELECT term, postings FROM terms WHERE term IN ({marks})", batch))
            writes: list[tuple[str, bytes]] = []
            deletes: list[tuple[str]] = []
            for term in batch:
                postings: dict[int, float] = {}
                blob = current.get(term)
                if blob is not None:
                    ids, tfs = decode(blob, term)
                    postings = dict(zip(ids, tfs, strict=False))
                for memory_id in self._removed.get(term, ()):
                    postings.pop(memory_id, None)
                postings.update(self._added.get(term, {}))
                if postings:
                    writes.append((term, encode(postings)))
                elif blob is not None:
                    deletes.append((term,))
            conn.executemany("INSERT OR REPLACE INTO terms (term, postings) VALUES (?, ?)", writes)
            conn.executemany("DELETE FROM terms WHERE term = ?", deletes)
        self._removed.clear()
        self._added.clear()
