"""What dense indexing plans, computes and reports (``memrouter.index.sqlite.dense``), and the SQL that counts it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "KNOWN_MODEL_IDS", "DenseStatus", "Embedded", "PendingWork", "chunk_details", "dense_status", "file_stem", "lacking_sql",
    "pending_size",
]  # fmt: skip

# Model ids of the built-in embedders, so freshness checks need not load a model.
KNOWN_MODEL_IDS = {
    "minilm": "all-MiniLM-L6-v2",
    "minilm-onnx": "all-MiniLM-L6-v2",
    "minilm-numpy": "all-MiniLM-L6-v2",
    "minilm-int8": "all-MiniLM-L6-v2-int8-v2",
    "sentence-transformers": "all-MiniLM-L6-v2",
}


@dataclass(frozen=True, slots=True)
class PendingWork:
    """Memories to embed, as (id, hash) at planning time, and their chunks: (id, hash, ordinal, chunk)."""

    memories: tuple[tuple[int, str], ...]
    pieces: tuple[tuple[int, str, int, Any], ...]


@dataclass(frozen=True, slots=True)
class Embedded:
    """``PendingWork``'s chunk vectors, in order, and (when tokens are kept) each chunk's packed token vectors."""

    vectors: NDArray[np.float32]
    tokens: list[bytes] | None = None


@dataclass(frozen=True, slots=True)
class DenseStatus:
    """What the dense index holds for the configured model."""

    model: str
    chunks: int
    embedded_memories: int
    pending_memories: int
    other_model_chunks: int
    token_chunks: int | None = None  # chunks with token vectors for the reranker (None: it is off)

    def to_dict(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "model": self.model,
            "chunks": self.chunks,
            "embedded_memories": self.embedded_memories,
            "pending_memories": self.pending_memories,
            "other_model_chunks": self.other_model_chunks,
            "reembed_needed": self.other_model_chunks > 0,
        }
        if self.token_chunks is not None:
            status["token_chunks"] = self.token_chunks
        return status


def lacking_sql(tokens: bool) -> str:
    """The SQL condition on memory ``m``: no chunks for its current hash and the model ``:model``; with ``tokens``
    on, or a chunk without token vectors."""
    without_tokens = (
        " OR EXISTS (SELECT 1 FROM chunks c WHERE c.memory_id = m.id AND c.model = :model AND NOT EXISTS ("
        "SELECT 1 FROM chunk_tokens t WHERE t.chunk_id = c.id))"
        if tokens
        else ""
    )
    return (
        "(NOT EXISTS (SELECT 1 FROM chunks c WHERE c.memory_id = m.id AND c.memory_hash = m.hash AND c.model = :model)"
        f"{without_tokens})"
    )


def pending_size(conn: sqlite3.Connection, model: str, tokens: bool) -> tuple[int, int]:
    """How many memories lack vectors of ``model`` (``lacking_sql``), and the characters of their text."""
    count, chars = conn.execute(
        f"SELECT count(*), coalesce(sum(length(m.body)), 0) FROM memories m WHERE {lacking_sql(tokens)}",
        {"model": model},
    ).fetchone()
    return int(count), int(chars)


def dense_status(conn: sqlite3.Connection, model: str, tokens: bool) -> DenseStatus:
    """The vectors of ``model`` the index holds, and what lacks them (``tokens``: token vectors are kept too)."""
    chunks, embedded = conn.execute(
        "SELECT count(*), count(DISTINCT c.memory_id) FROM chunks c JOIN memories m "
        "ON m.id = c.memory_id AND m.hash = c.memory_hash WHERE c.model = ?",
        (model,),
    ).fetchone()
    other = conn.execute("SELECT count(*) FROM chunks WHERE model != ?", (model,)).fetchone()[0]
    total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    token_count = (
        conn.execute(
            "SELECT count(*) FROM chunk_tokens t JOIN chunks c ON c.id = t.chunk_id WHERE c.model = ?", (model,)
        ).fetchone()[0]
        if tokens
        else None
    )
    pending = pending_size(conn, model, tokens)[0] if tokens else total - embedded
    return DenseStatus(model, chunks, embedded, pending, other, token_count)


def chunk_details(conn: sqlite3.Connection, chunk_ids: list[int]) -> dict[int, tuple[str, int]]:
    """Chunk id -> ("chunk N: heading", its start offset in the body)."""
    if not chunk_ids:
        return {}
    marks = ", ".join("?" * len(chunk_ids))
    rows = conn.execute(f"SELECT id, ordinal, heading, start FROM chunks WHERE id IN ({marks})", chunk_ids)
    return {row[0]: (f"chunk {row[1]}" + (f": {row[2]}" if row[2] else ""), row[3]) for row in rows}


def file_stem(model_id: str) -> str:
    """``model_id`` as part of a file name (the dense matrix cache's)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id)
