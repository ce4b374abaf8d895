"""A second stage that reads the candidates: late interaction over MiniLM's token vectors.

Fusion ranks memories by what each retriever saw: words (BM25F) or one
vector per chunk. With ``[search] rerank = true`` the best ``DEPTH`` fused
candidates are read again, word piece by word piece: each query word piece
(stop words and punctuation aside) is matched with its most similar word
piece in a chunk, and the chunk scores the mean of those best matches
(MaxSim, as in ColBERT, here over the last layer of all-MiniLM-L6-v2, the
model that makes the dense vectors). A memory is read in its ``CHUNKS_READ``
chunks nearest the query by their dense vectors, and scores its best. The
reranked order is then fused with the first stage's by reciprocal rank, the
reranker's rank weighing ``WEIGHT``, so one weak reading does not bury a hit
both retrievers agreed on.

The chunks' token vectors come from the forward pass that makes their dense
vectors (``BertEmbedderBase.embed_with_tokens``), and are kept in
``chunk_tokens`` next to the chunk: stop words and punctuation left out,
each vector as int8 with its own scale (``pack``). They are written only
while reranking is on; turning it on makes the memories without them
pending, and the next ``memrouter index`` (or the background thread) adds
them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memrouter.index.fusion import Fused
from memrouter.index.text import STOP_WORDS
from memrouter.model import Match

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold search imports this module)
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memrouter.index.folders import FolderContext

__all__ = ["CHUNKS_READ", "DEPTH", "WEIGHT", "TokenFilter", "late_interaction", "pack", "reordered", "unpack"]

# How many fused candidates are read again, and how much the reranked order weighs in the final fusion
# (the first stage's order weighs 1). Measured on every evaluation set: benchmarks/fit_fusion.py --rerank.
DEPTH = 30
WEIGHT = 2.0
# A memory is read in its chunks most similar to the query by their dense vectors, at most this many.
CHUNKS_READ = 4


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

    quantized, scale = _parts(blob, dimension)
    count = len(scale) // 4
    rows = np.frombuffer(quantized, dtype=np.int8).reshape(count, dimension).astype(np.float32)
    result: NDArray[np.float32] = rows * np.frombuffer(scale, dtype="<f4")[:, None]
    return result


def _parts(blob: bytes, dimension: int) -> tuple[bytes, bytes]:
    """A packed blob's int8 rows and its scales, as bytes (``ValueError`` for a blob of another shape)."""
    count = len(blob) // (dimension + 4)
    if count * (dimension + 4) != len(blob):
        raise ValueError(f"a token blob of {len(blob)} bytes does not hold {dimension}-d rows")
    return blob[: count * dimension], blob[count * dimension :]


def late_interaction(
    conn: sqlite3.Connection,
    query: NDArray[np.float32],
    chunks: dict[int, list[int]],
    dimension: int,
    folders: FolderContext | None = None,
) -> dict[int, float]:
    """Each memory's best chunk score, over its ``chunks`` (memory id -> chunk ids to read): the mean over
    ``query``'s rows (unit word-piece vectors) of their best match among the chunk's stored word pieces.
    Memories without token vectors are left out.

    With ``folders`` (``memrouter.index.folders``), a memory in a folder with an overview borrows, for
    each query piece, ``share`` of the overview's best match where that is more, as lexical search does
    for each query term (the overview's chunks must be in ``chunks`` too)."""
    import numpy as np

    wanted = [chunk for ids in chunks.values() for chunk in ids]
    if not wanted or not len(query):
        return {}
    blobs = dict(
        conn.execute(
            f"SELECT chunk_id, tokens FROM chunk_tokens WHERE chunk_id IN ({', '.join('?' * len(wanted))})", wanted
        ).fetchall()
    )
    owner_of = {chunk: memory_id for memory_id, ids in chunks.items() for chunk in ids}
    rows = [(owner_of[chunk], blob) for chunk, blob in blobs.items() if blob]
    if not rows:
        return {}
    # One int8 matrix of every chunk's pieces: its similarity to the query is scaled per piece afterwards.
    parts = [_parts(blob, dimension) for _, blob in rows]
    pieces = np.frombuffer(b"".join(quantized for quantized, _ in parts), np.int8)
    scales = np.frombuffer(b"".join(scale for _, scale in parts), "<f4")
    similarity = query @ pieces.reshape(-1, dimension).astype(np.float32).T
    similarity *= scales
    starts = np.cumsum([0, *(len(scale) // 4 for _, scale in parts[:-1])])
    matches = np.maximum.reduceat(similarity, starts, axis=1)  # (query pieces, chunks): each piece's best
    lent: dict[int, NDArray[np.float32]] = {}  # overview id -> each query piece's best match in it, times share
    if folders:
        for column, (memory_id, _) in enumerate(rows):
            if memory_id in folders.members:
                here = (matches[:, column] * folders.share).astype(np.float32)
                lent[memory_id] = np.maximum(lent[memory_id], here) if memory_id in lent else here
    best: dict[int, float] = {}
    for column, (memory_id, _) in enumerate(rows):
        column_matches = matches[:, column]
        owner = folders.owner.get(memory_id) if folders else None
        if owner is not None and owner in lent:
            column_matches = np.maximum(column_matches, lent[owner])
        score = float(column_matches.mean())
        if score > best.get(memory_id, -2.0):
            best[memory_id] = score
    return best


def reordered(fused: list[Fused], scores: dict[int, float], k: int, weight: float = WEIGHT) -> list[Fused]:
    """``fused`` fused again with its reranked order: each hit scores ``1 / (k + its rank)`` plus, among
    the first ``DEPTH``, ``weight / (k + its rank by late interaction)`` (``scores``; nothing for a memory
    without one). Each reranked hit's ``why`` gains a ``rerank`` match (its rank and score)."""
    if not scores:
        return fused
    head = [item.memory_id for item in fused[:DEPTH] if item.memory_id in scores]
    ranks = {memory_id: rank for rank, memory_id in enumerate(sorted(head, key=lambda m: (-scores[m], m)), 1)}
    combined: list[tuple[float, int, Fused]] = []
    for position, item in enumerate(fused, 1):
        rank = ranks.get(item.memory_id) if position <= DEPTH else None  # (an id is in fused once)
        total = 1.0 / (k + position) + (weight / (k + rank) if rank is not None else 0.0)
        why = item.why if rank is None else (*item.why, Match("rerank", rank, round(scores[item.memory_id], 6)))
        combined.append((total, position, Fused(item.memory_id, round(total, 6), why, item.offset)))
    combined.sort(key=lambda entry: (-entry[0], entry[1]))
    return [item for _, _, item in combined]
