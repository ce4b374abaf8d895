"""Reading one project's rows: BM25F and pgvector search, listings (all through ``ProjectScope``).

Lexical scoring is the SQLite path's BM25F, computed in SQL over the postings
of the query's terms (``memrouter.index.postgres.bm25``). Dense search orders
chunks by cosine distance (the HNSW index of their dimension) and keeps each
memory's best chunk, as ``memrouter.index.sqlite.dense`` does. The knowledge graph
is read whole (``graph_rows``), as the local index's is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrouter.core.model import PENDING, Filters, MemorySummary
from memrouter.index.postgres import bm25
from memrouter.index.postgres.bm25 import POSTINGS_CAP
from memrouter.index.postgres.connect import Database
from memrouter.index.postgres.filters import filter_sql
from memrouter.index.postgres.scope import ProjectScope
from memrouter.index.sqlite.dense import CHUNKS_PER_MEMORY

__all__ = ["DenseHit", "PgIndex", "vector_text"]


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

    def __init__(self, database: Database, project: str, *, ef_search: int | None = None) -> None:
        """``ef_search``: HNSW candidates per dense query (``[index] ef_search``; None: the pool's setting)."""
        self.database = database
        self.scope = ProjectScope(database, project)
        self.ef_search = ef_search

    @property
    def project(self) -> str:
        return self.scope.project

    def lexical(
        self,
        terms: list[str],
        filters: Filters,
        limit: int,
        within: list[str] | None = None,
        *,
        share: float = 0.0,
        cap: int | None = POSTINGS_CAP,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best memories by BM25F for the (already tokenised) ``terms``: (name, score).

        ``share``: what a folder's overview lends its memories (``memrouter.index.folders``; 0: nothing);
        ``cap``: postings read per word, best impact first (``memrouter.index.postgres.bm25``; None: all).
        """
        return bm25.search(self.scope, terms, filters, limit, within, share=share, cap=cap)

    def dense(
        self, vector: Any, model: str, filters: Filters, limit: int, within: list[str] | None = None,
        *, share: float = 0.0,
    ) -> list[DenseHit]:  # fmt: skip
        """The ``limit`` memories whose best chunk (of ``model``'s vectors) is nearest ``vector``.

        The nearest chunks come from the HNSW index (``hnsw.ef_search``, iterative scans), widened
        until enough pass the filters; exact search over every chunk when widening is not enough.
        ``share``: what a folder's overview lends its memories (``memrouter.index.folders``; 0: nothing).
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
                "SELECT m.id, m.name, m.overview_id, n.ordinal, n.heading, n.start, n.distance "
                f"FROM ({source}) n JOIN {{memories}} m ON m.id = n.memory_id WHERE true{where} "
                "ORDER BY n.distance, m.name LIMIT %(k)s",
                {**params, "depth": depth, "k": wanted},
                ef_search=self.ef_search,
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
        if share > 0:
            best = self._lend(best, rows, share, params, dimension)
        return sorted(best.values(), key=lambda hit: -hit.score)[:limit]

    def _lend(
        self,
        best: dict[str, DenseHit],
        rows: list[dict[str, Any]],
        share: float,
        params: dict[str, Any],
        dimension: int,
    ) -> dict[str, DenseHit]:
        """Each hit raised to ``share`` of its folder overview's similarity where that is more
        (``FolderContext.lend_similarity``); an overview outside the hits is measured exactly."""
        similarity = {row["id"]: best[row["name"]].score for row in rows}
        owners = {row["name"]: row["overview_id"] for row in rows if row["overview_id"] is not None}
        missing = sorted({owner for owner in owners.values() if owner not in similarity})
        if missing:
            measured = self.scope.rows(
                f"SELECT c.memory_id, max(1.0 - (c.embedding::vector({dimension}) <=> %(vector)s::vector({dimension}))) "
                f"AS similarity FROM {{chunks}} c WHERE c.memory_id = ANY(%(owners)s) AND c.model = %(model)s "
                f"AND c.dimension = {dimension} GROUP BY c.memory_id",
                {"vector": params["vector"], "model": params["model"], "owners": missing},
            )
            similarity |= {row["memory_id"]: round(float(row["similarity"]), 6) for row in measured}
        lent = dict(best)
        for name, owner in owners.items():
            borrowed = share * similarity.get(owner, -1.0)
            if borrowed > best[name].score:
                lent[name] = DenseHit(name, round(borrowed, 6), best[name].detail, best[name].offset)
        return lent

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

    def generation(self) -> int:
        """How many times the project's rows have changed (``Writer.bump``); 0 before its first push."""
        rows = self.scope.rows("SELECT generation FROM {project} p")
        return int(rows[0]["generation"]) if rows else 0

    def graph_rows(self) -> list[tuple[str, str | None, str | None, str, str]]:
        """(name, valid_from, valid_until, keys, edges) of every memory the graph shows (none pending review),
        the keys and edges as ``memrouter.index.sqlite.graph`` encodes them."""
        rows = self.scope.rows(
            "SELECT name, valid_from, valid_until, coalesce(graph_keys, '{{}}') AS keys, "
            "coalesce(graph_edges, '[]') AS edges FROM {memories} m WHERE m.status != %(pending)s ORDER BY m.name",
            {"pending": PENDING},
        )
        return [(row["name"], row["valid_from"], row["valid_until"], row["keys"], row["edges"]) for row in rows]

    def count(self) -> int:
        return int(self.scope.rows("SELECT count(*) AS n FROM {memories} m")[0]["n"])
