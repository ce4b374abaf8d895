"""What dense indexing plans, computes and reports (``memrouter.index.sqlite.dense``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DenseStatus", "Embedded", "PendingWork"]


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
