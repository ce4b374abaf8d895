"""Reading one project's rows: BM25F and pgvector search, listings (all through ``ProjectScope``).

Lexical scoring is the SQLite path's BM25F (``memrouter.index.lexical``: the
same field-weighted term frequencies, k1 and b), computed in SQL over the
postings of the query's terms, so both stores rank alike. Dense search orders
chunks by cosine distance (the HNSW index of their dimension) and keeps each
memory's best chunk, as ``memrouter.index.dense`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrouter.index.dense import CHUNKS_PER_MEMORY
from memrouter.index.lexical import K1, B
from memrouter.model import Filters, MemorySummary
from memrouter.pgindex.connect import Database
from memrouter.pgindex.filters import filter_sql
from memrouter.pgindex.scope import ProjectScope

__all__ = ["DenseHit", "PgIndex", "vector_text"]

_LEXICAL = f"""
WITH q AS (SELECT unnest(%(terms)s::text[]) AS term),
stats AS (SELECT count(*)::float8 AS n, coalesce(nullif(avg(length), 0), 1.0) AS avgdl FROM {{memories}} a),
df AS (SELECT p.term, count(*)::float8 AS df FROM {{postings}} p WHERE p.term = ANY(%(terms)s) GROUP BY p.term)
SELECT m.name, sum(ln(1.0 + (s.n - d.df + 0.5) / (d.df + 0.5)) * {K1 + 1.0}
                   * p.tf / (p.tf + {K1} * (1 - {B} + {B} * m.length / s.avgdl))) AS score
FROM q JOIN df d ON d.term = q.term JOIN {{postings}} p ON p.term = q.term
JOIN {{memories}} m ON m.id = p.memory_id CROSS JOIN stats s
WHERE true{{where}}
GROUP BY m.name ORDER BY score DESC, m.name LIMIT %(limit)s
"""


@dataclass(frozen=True, slots=True)
class DenseHit:
    name: str
    score: float
    detail: str
    offset: int


def vector_text(values: Any) -> str:
    """pgvector's text form of a sequence of floats."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


class PgIndex:
    """One project's searches and listings over the PostgreSQL rows."""

    def __init__(self, database: Database, project: str) -> None:
        self.database = database
        self.scope = ProjectScope(database, project)

    @property
    def project(self) -> str:
        return self.scope.project

    def lexical(
        self, terms: list[str], filters: Filters, limit: int, within: list[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``limit`` best memories by BM25F for the (already tokenised) ``terms``: (name, score)."""
        if not terms:
            return []
        where, params = filter_sql(filters, within)
        sql = _LEXICAL.replace("{where}", where)
        rows = self.scope.rows(sql, {**params, "terms": terms, "limit": limit})
        return [(row["name"], float(row["score"])) for row in rows]

    def dense(
        self, vector: Any, model: str, filters: Filters, limit: int, within: list[str] | None = None
    ) -> list[DenseHit]:
        """The ``limit`` memories whose best chunk (of ``model``'s vectors) is nearest ``vector``.

        The nearest chunks come from the HNSW index (``hnsw.ef_search``, iterative scans), widened
        until enough pass the filters; exact search over every chunk when widening is not enough.
        """
        dimension = len(vector)
        where, params = filter_sql(filters, within)
        wanted = limit * CHUNKS_PER_MEMORY
        params = {**params, "vector": vector_text(vector), "model": model}
        distance = f"c.embedding::vector({dimension}) <=> %(vector)s::vector({dimension})"
        nearest = (
            f"SELECT c.memory_id, c.ordinal, c.heading, c.start, {distance} AS distance FROM {{chunks}} c "
            f"WHERE c.model = %(model)s AND c.dimension = {dimension} ORDER BY distance LIMIT %(depth)s"
        )
        for depth in (wanted * 4, wanted * 32, None):
            source = nearest if depth is not None else nearest.replace(" LIMIT %(depth)s", "")
            rows = self.scope.rows(
                f"SELECT m.name, n.ordinal, n.heading, n.start, n.distance FROM ({source}) n "
                f"JOIN {{memories}} m ON m.id = n.memory_id WHERE true{where} ORDER BY n.distance, m.name LIMIT %(k)s",
                {**params, "depth": depth, "k": wanted},
            )
            if len(rows) >= wanted or depth is None:
                break
            if not self.scope.rows(
                f"SELECT 1 FROM {{chunks}} c WHERE c.model = %(model)s AND c.dimension = {dimension} OFFSET %(depth)s LIMIT 1",
                {**params, "depth": depth},
            ):
                break  # every chunk was seen already
        best: dict[str, DenseHit] = {}
        for row in rows:
            if row["name"] not in best:
                detail = f"chunk {row['ordinal']}" + (f": {row['heading']}" if row["heading"] else "")
                best[row["name"]] = DenseHit(row["name"], round(1.0 - float(row["distance"]), 6), detail, row["start"])
        return list(best.values())[:limit]

    def summaries(self, filters: Filters) -> list[MemorySummary]:
        """The memories passing ``filters``, by name."""
        where, params = filter_sql(filters)
        rows = self.scope.rows(
            "SELECT name, title, channel, kind, status, tags, hash, path, size FROM {memories} m "
            f"WHERE true{where} ORDER BY name",
            params,
        )
        return [
            MemorySummary(
                row["name"],
                row["title"],
                row["channel"],
                row["kind"],
                row["status"],
                tuple(row["tags"]),
                row["hash"],
                row["path"],
                int(row["size"]),
            )  # fmt: skip
            for row in rows
        ]

    def count(self) -> int:
        return int(self.scope.rows("SELECT count(*) AS n FROM {memories} m")[0]["n"])
