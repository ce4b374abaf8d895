"""Search hits from the index rows of fused candidates, each with its provenance."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memrouter.index import queries
from memrouter.index.fusion import Fused
from memrouter.index.lexical import snippet
from memrouter.model import Hit, Provenance

__all__ = ["CANONICAL", "canonical_hits"]

CANONICAL = "canonical"


def canonical_hits(
    conn: sqlite3.Connection, fused: list[Fused], query: str, content_of: Callable[[str], str | None] | None
) -> list[Hit]:
    """One hit per fused candidate still indexed, in order (``content_of`` adds each file's text)."""
    rows = queries.hit_rows(conn, [item.memory_id for item in fused])
    hits = []
    for item in fused:
        row = rows.get(item.memory_id)
        if row is None:
            continue
        provenance = Provenance(
            author=row["author"], source=row["source"], created=row["created"], updated=row["updated"],
            confidence=row["confidence"], verified_by=row["verified_by"],
        )  # fmt: skip
        hits.append(
            Hit(
                name=row["name"], title=row["title"], score=item.score, source=CANONICAL, channel=row["channel"],
                path=row["path"], hash=row["hash"], snippet=snippet(row["body"], query, at=item.snippet_offset),
                why=item.why, kind=row["kind"], content=content_of(row["name"]) if content_of else None,
                provenance=provenance,
            )
        )  # fmt: skip
    return hits
