"""The second stage asked of a reranking endpoint (``[rerank] url``, ``memrouter.embed.endpoint``).

The best ``DEPTH`` fused candidates are sent as passages: each memory's title
and the chunk most similar to the query by its dense vector (its first
``FALLBACK_CHARS`` characters when the index holds no vectors for it). The
endpoint's scores order them; each keeps the first-stage score of the place it
moves to, so the scores stay on one scale, and its ``why`` gains a ``rerank``
entry. The rest of the fused list follows unchanged.
"""

from __future__ import annotations

import sqlite3

from memrouter.core.errors import EndpointError
from memrouter.core.model import Match
from memrouter.core.records import replace
from memrouter.index.fusion import Fused
from memrouter.index.sqlite import queries

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.index.sqlite.dense import DenseIndex

__all__ = ["FALLBACK_CHARS", "passages", "reordered"]

FALLBACK_CHARS = 1500


def passages(conn: sqlite3.Connection, dense: DenseIndex | None, query: str, memory_ids: list[int]) -> list[str]:
    """One passage per memory of ``memory_ids``, in order (see the module docstring)."""
    rows = queries.hit_rows(conn, memory_ids)
    best: dict[int, list[int]] = {}
    if dense is not None:
        try:
            best = dense.best_chunks(conn, query, memory_ids, 1)
        except EndpointError:
            best = {}  # the embedding endpoint is down: the passages start at the top
    spans = queries.chunk_spans(conn, [ids[0] for ids in best.values() if ids])
    found = []
    for memory_id in memory_ids:
        row = rows.get(memory_id)
        if row is None:
            found.append("")
            continue
        body, title = str(row["body"] or ""), str(row["title"] or "")
        chunk = best.get(memory_id)
        span = spans.get(chunk[0]) if chunk else None
        if span is not None:
            start, end, heading = span
            found.append("\n".join(part for part in (title, heading or "", body[start:end]) if part))
        else:
            found.append(f"{title}\n{body[:FALLBACK_CHARS]}" if title else body[:FALLBACK_CHARS])
    return found


def reordered(head: list[Fused], scores: list[float], model: str | None) -> list[Fused]:
    """``head`` ordered by ``scores`` (one per item), each at the first-stage score of its new place."""
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    places = sorted((item.score for item in head), reverse=True)
    label = f"reranking endpoint{f' ({model})' if model else ''}"
    return [
        replace(head[i], score=places[rank], why=(*head[i].why, Match("rerank", rank + 1, round(scores[i], 6), label)))
        for rank, i in enumerate(order)
    ]
