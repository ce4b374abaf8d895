"""A deterministic embedder with no model: bag of words by feature hashing.

Each lower-cased word (and word bigram) is hashed (BLAKE2b) to a signed
coordinate; the counts are log-scaled and the vector is L2-normalised. Texts
sharing words get similar vectors, so it behaves like a (weak) real embedder
in tests of the index and search code, instantly and without weights. Its
``model_id`` names the dimension, so its vectors never mix with a model's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Feature-hashing bag-of-words embedder (``get_embedder("hash", dimension=256)``).

    ``count_tokens`` counts words and punctuation marks plus two, mirroring
    the special tokens of a transformer window; ``max_tokens`` is nominal.
    """

    runtime = "hash"

    def __init__(self, *, dimension: int = 256, max_tokens: int = 256) -> None:
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.model_id = f"hash-bow-{dimension}"

    def count_tokens(self, text: str) -> int:
        """Words and punctuation marks, plus two for the window's special tokens."""
        return len(re.findall(r"\w+|[^\w\s]", text)) + 2

    def embed(self, text: str) -> NDArray[np.float32]:
        """Embed one text."""
        row: NDArray[np.float32] = self.embed_batch([text])[0]
        return row

    def embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts: float32 (len(texts), dimension), rows of unit norm (zero for no words)."""
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            features = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
            for feature in features:
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self.dimension] += sign
        magnitude = np.log1p(np.abs(out)) * np.sign(out)
        norms = np.linalg.norm(magnitude, axis=1, keepdims=True)
        result: NDArray[np.float32] = (magnitude / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return result
