"""Word-piece vectors kept beside each chunk for the second stage (``memrouter.index.sqlite.rerank``).

Each vector is stored as int8 with its own float32 scale (``pack``); stop
words and punctuation are left out (``TokenFilter``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memrouter.index.text import STOP_WORDS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold search imports this module)
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["TokenFilter", "pack", "split_blob", "unpack"]


@dataclass(frozen=True, slots=True)
class TokenFilter:
    """Which word pieces of a vocabulary count in late interaction (not stop words, not punctuation)."""

    skipped: frozenset[int]

    @classmethod
    def of(cls, vocabulary: dict[str, int]) -> TokenFilter:
        return cls(
            frozenset(
                index for piece, index in vocabulary.items()
                if piece in STOP_WORDS or (len(piece) == 1 and not piece.isalnum()) or piece.startswith("[")
            )
        )  # fmt: skip

    def kept(self, ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        """A mask over ``ids``: True where the piece counts."""
        import numpy as np

        return np.fromiter((int(i) not in self.skipped for i in ids), dtype=bool, count=len(ids))


def pack(vectors: NDArray[np.float32]) -> bytes:
    """Token vectors (tokens, dimension) as int8 rows, each with its own float32 scale after them."""
    import numpy as np

    scale = np.abs(vectors).max(axis=1) / 127.0 if len(vectors) else np.zeros(0, dtype=np.float32)
    scale = np.maximum(scale, 1e-12).astype(np.float32)
    quantized = np.round(vectors / scale[:, None]).astype(np.int8)
    packed: bytes = quantized.tobytes() + scale.astype("<f4").tobytes()
    return packed


def unpack(blob: bytes, dimension: int) -> NDArray[np.float32]:
    """``pack``'s rows back as float32 (tokens, dimension)."""
    import numpy as np

    quantized, scale = split_blob(blob, dimension)
    count = len(scale) // 4
    rows = np.frombuffer(quantized, dtype=np.int8).reshape(count, dimension).astype(np.float32)
    result: NDArray[np.float32] = rows * np.frombuffer(scale, dtype="<f4")[:, None]
    return result


def split_blob(blob: bytes, dimension: int) -> tuple[bytes, bytes]:
    """A packed blob's int8 rows and its scales, as bytes (``ValueError`` for a blob of another shape)."""
    count = len(blob) // (dimension + 4)
    if count * (dimension + 4) != len(blob):
        raise ValueError(f"a token blob of {len(blob)} bytes does not hold {dimension}-d rows")
    return blob[: count * dimension], blob[count * dimension :]
