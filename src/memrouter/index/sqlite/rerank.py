"""A second stage that reads the candidates: late interaction over MiniLM's token vectors.

Fusion ranks memories by what each retriever saw: words (BM25F) or one
vector per chunk. With ``[search] rerank = true`` the best ``DEPTH`` fused
candidates are read again, word piece by word piece: each query word piece
(stop words and punctuation aside) is matched with its most similar word
piece in a chunk, and the chunk scores the mean of those best matches
(MaxSim, as in ColBERT, here over the last layer of all-MiniLM-L6-v2, the
model that makes the dense vectors). A memory is read in its ``CHUNKS_READ``
chunks nearest the query by their dense vectors, and scores its best.

The second stage then orders what it read by one score (``rescored``): that
late-interaction score, plus ``LEXICAL_SHARE`` of the memory's lexical score
(relative to the best lexical hit's) and ``DENSE_SHARE`` of its dense
similarity, so the reading refines what both retrievers saw rather than
replacing it. A memory in a numbered series (``memrouter.index.series``:
conversation turns, dated notes) is read with its neighbours, which join
the candidates, and adds ``NEIGHBOUR_SHARE`` of the better neighbour's score:
the answer is often the turn after the one that shares the question's words.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memrouter.core.model import Match
from memrouter.index.fusion import Fused, Ranked
from memrouter.index.series import neighbours
from memrouter.index.sqlite.token_vectors import split_blob

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold search imports this module)
if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np
    from numpy.typing import NDArray

    from memrouter.index.folders import FolderContext
    from memrouter.index.sqlite.dense import DenseIndex

__all__ = [
    "CHUNKS_READ",
    "DENSE_SHARE",
    "DEPTH",
    "LEXICAL_SHARE",
    "NEIGHBOUR_SHARE",
    "Reading",
    "SHARES",
    "Shares",
    "TIME_SHARE",
    "late_interaction",
    "read_again",
    "rescored",
]

# How many fused candidates are read again, and the shares of the second stage's score (see the module's
# docstring). Fitted on every evaluation set, each left out in turn: benchmarks/fit_rerank.py.
DEPTH = 30
LEXICAL_SHARE = 0.15
DENSE_SHARE = 0.4
NEIGHBOUR_SHARE = 0.5
# What a memory inside the window of a time phrase in the query adds ([search] time_words = "boost"):
# measured on LoCoMo-10 with benchmarks/bench_locomo.py --time-words boost (first five conversations).
TIME_SHARE = 0.2
# A memory is read in its chunks most similar to the query by their dense vectors, at most this many.
CHUNKS_READ = 4


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
    parts = [split_blob(blob, dimension) for _, blob in rows]
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


@dataclass(frozen=True, slots=True)
class Reading:
    """What the second stage knows of one candidate: its late-interaction score (None: no token vectors),
    its lexical score relative to the best lexical hit's (0 when lexical search did not find it), its
    dense similarity, and whether it is inside the window of a time phrase in the query."""

    late: float | None
    lexical: float
    dense: float
    inside: bool = False

    def score(self, shares: Shares) -> float:
        """The candidate's own score (a reading without token vectors counts its late part as 0)."""
        own = (self.late or 0.0) + shares.lexical * self.lexical + shares.dense * self.dense
        return own + shares.time if self.inside else own


@dataclass(frozen=True, slots=True)
class Shares:
    """How much of each part the second stage's score adds to the late-interaction score."""

    lexical: float = LEXICAL_SHARE
    dense: float = DENSE_SHARE
    neighbour: float = NEIGHBOUR_SHARE
    time: float = TIME_SHARE


SHARES = Shares()


def rescored(
    fused: list[Fused],
    readings: dict[int, Reading],
    neighbours: Mapping[int, Sequence[int]] | None = None,
    shares: Shares = SHARES,
) -> list[Fused]:
    """``fused`` with every memory read (``readings``: its first ``DEPTH`` and their series ``neighbours``,
    memory id -> neighbour ids) first, by the second stage's score, then the rest of ``fused`` in its order.

    Each memory read adds ``shares.neighbour`` of its better read neighbour's own score. Its ``why`` gains
    a ``rerank`` match (its new rank and score), and it takes the first-stage score of the place it moves
    to, so the scores keep one scale and their order. Without any late-interaction score (no token
    vectors yet) ``fused`` is returned as it is."""
    if not any(reading.late is not None for reading in readings.values()):
        return fused
    own = {memory_id: reading.score(shares) for memory_id, reading in readings.items()}
    total: dict[int, float] = {}
    lent: dict[int, float] = {}
    for memory_id, score in own.items():
        near = max((own[n] for n in (neighbours or {}).get(memory_id, ()) if n in own), default=None)
        lent[memory_id] = shares.neighbour * near if near is not None else 0.0
        total[memory_id] = score + lent[memory_id]
    order = sorted(total, key=lambda memory_id: (-total[memory_id], memory_id))
    first = {item.memory_id: item for item in fused}
    places = sorted((first[m].score for m in order if m in first), reverse=True)
    result: list[Fused] = []
    for rank, memory_id in enumerate(order, 1):
        reading, item = readings[memory_id], first.get(memory_id)
        detail = (
            f"late interaction {reading.late if reading.late is not None else 0.0:.3f}, "
            f"lexical {reading.lexical:.2f} of the best, dense {reading.dense:.3f}"
            + (f", neighbour {lent[memory_id]:.3f}" if lent[memory_id] else "")
            + (", in the time window" if reading.inside else "")
        )
        why = (*(item.why if item else ()), Match("rerank", rank, round(total[memory_id], 6), detail))
        score = places[rank - 1] if rank <= len(places) else places[-1] if places else 0.0
        result.append(Fused(memory_id, score, why, item.offset if item else None))
    result += [item for item in fused if item.memory_id not in total]
    ceiling = result[0].score
    for position, item in enumerate(result):  # no score rises down the list (recency decay re-sorts by score)
        if item.score > ceiling:
            result[position] = Fused(item.memory_id, ceiling, item.why, item.offset)
        ceiling = result[position].score
    return result


def read_again(
    conn: sqlite3.Connection,
    dense: DenseIndex,
    folders: FolderContext,
    query: str,
    fused: list[Fused],
    lexical: Sequence[Ranked],
    passing: Callable[[int], bool] | None = None,
    window: frozenset[int] = frozenset(),
    depth: int = DEPTH,
) -> tuple[dict[int, Reading], dict[int, tuple[int, ...]]]:
    """What the second stage reads for ``query``: the first ``depth`` of ``fused`` and their neighbours in a
    numbered series (those ``passing`` the search's filters), each memory's ``Reading``, and the neighbours
    of each (for ``rescored``). ``lexical`` is the lexical retriever's list (empty in semantic mode);
    ``window`` holds the memories a time phrase's boost lifts."""
    head = [item.memory_id for item in fused[:depth]]
    near = neighbours(conn, head, passing)
    read = list(dict.fromkeys([*head, *(n for ids in near.values() for n in ids)]))
    near = neighbours(conn, read, passing) if len(read) > len(head) else near
    overviews = {folders.owner[m] for m in read if m in folders.owner}
    chunks = dense.best_chunks(conn, query, list(dict.fromkeys([*read, *overviews])), CHUNKS_READ)
    late = late_interaction(conn, dense.query_tokens(query), chunks, dense.embedder.dimension, folders)
    similarity = dense.similarities(conn, query, read, folders)
    found = {candidate.memory_id: candidate.score for candidate in lexical}
    best = max(found.values(), default=0.0)
    readings = {
        m: Reading(late.get(m), found.get(m, 0.0) / best if best > 0 else 0.0, similarity.get(m, 0.0), m in window)
        for m in read
    }
    return readings, near
