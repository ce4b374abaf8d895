"""The one place every statement is tied to its project.

A read is written against ``{memories}``, ``{postings}`` and ``{chunks}``;
``ProjectScope.sql`` replaces each with that table restricted to the scope's
project and binds ``%(project)s`` itself, and refuses a statement that names
a table directly. Writes are this class's methods, each keyed by the project.
So no read or write of one project can see or touch another's rows
(``tests/postgres/test_isolation.py`` tries every public operation).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.index.folders import OVERVIEW_NAMES, FolderContext
from memrouter.index.postgres.connect import Database
from memrouter.index.postgres.impact import IMPACT, impact
from memrouter.index.postgres.schema import hnsw_index

TYPE_CHECKING = False
if TYPE_CHECKING:
    import psycopg

__all__ = ["MEMORY_COLUMNS", "ProjectScope", "Writer"]

TABLES = ("memories", "postings", "chunks", "terms")
# ``{project}``: the project's own row (its lexical statistics).
_SCOPED = {table: f"(SELECT * FROM {table} WHERE project = %(project)s)" for table in (*TABLES, "projects")}
_SCOPED["project"] = _SCOPED.pop("projects")
_RAW = re.compile(r"\b(?:from|join|into|update)\s+(?:memories|postings|chunks|terms|projects)\b", re.IGNORECASE)
# Past this many changed terms, a push recounts every term of the project in one pass.
_RECOUNT_ALL = 20_000
# The memory row's columns (``id`` and ``project`` aside), as the mirror copies them.
MEMORY_COLUMNS = (
    "name", "path", "hash", "size", "title", "tags", "channel", "kind", "scope", "status", "source", "author",
    "confidence", "verified_by", "created", "updated", "valid_from", "valid_until", "supersedes", "superseded_by",
    "expires", "anchors", "extra", "problems", "body", "length", "vectors", "graph_keys", "graph_edges",
)  # fmt: skip


class ProjectScope:
    """One project's view of the database."""

    def __init__(self, database: Database, project: str) -> None:
        if not project or len(project) > 200:
            raise InvalidInput("a project key must be 1 to 200 characters")
        self.database = database
        self.project = project

    def sql(self, template: str) -> str:
        """``template`` with each ``{table}`` restricted to this project; a table named directly is refused."""
        if _RAW.search(template):
            raise ValueError(f"unscoped statement: {template[:80]!r}")
        return template.format(**_SCOPED)

    def rows(
        self, template: str, params: dict[str, Any] | None = None, *, ef_search: int | None = None
    ) -> list[dict[str, Any]]:
        """The rows of one read (a dict per row); ``ef_search``: ``hnsw.ef_search`` for this read only."""
        from psycopg.rows import dict_row

        statement, values = self.sql(template).encode(), {**(params or {}), "project": self.project}
        with self.database.connection() as conn, conn.cursor(row_factory=dict_row) as cursor:
            if ef_search is None or ef_search == self.database.ef_search:  # the pool's own setting
                cursor.execute(statement, values)
                return cursor.fetchall()
            with conn.transaction():
                cursor.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}".encode())
                cursor.execute(statement, values)
                return cursor.fetchall()

    def mark(self) -> str:
        """The mark of the local index the project's rows last matched ('' if none)."""
        with self.database.connection() as conn:
            row = conn.execute("SELECT mark FROM projects WHERE project = %s", (self.project,)).fetchone()
        return str(row[0]) if row else ""

    def vector_indexes(self, dimensions: Iterable[int]) -> None:
        """Make the HNSW index of each vector dimension that lacks one (shared by every project)."""

        for dimension in sorted(dimensions):
            with self.database.connection() as conn, conn.transaction():
                hnsw_index(conn, dimension)

    def analyze(self) -> None:
        """Refresh the planner's statistics of the shared tables, and the postings' visibility map so their
        index-only scans read no table pages (after a bulk change)."""
        with self.database.connection() as conn:
            conn.execute(b"VACUUM (ANALYZE) postings")
            conn.execute(b"ANALYZE memories, chunks, terms")

    @contextmanager
    def writing(self) -> Iterator[Writer]:
        """One transaction over this project's rows, holding the project's advisory lock (writers queue)."""
        with self.database.connection() as conn, conn.transaction():
            conn.execute("INSERT INTO projects (project) VALUES (%s) ON CONFLICT (project) DO NOTHING", (self.project,))
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('memrouter:' || %s))", (self.project,))
            yield Writer(conn, self)


class Writer:
    """The writes of one transaction, every one keyed by the scope's project."""

    def __init__(self, conn: psycopg.Connection[Any], scope: ProjectScope) -> None:
        self.conn = conn
        self.scope = scope
        self.project = scope.project

    def states(self) -> dict[str, tuple[str, str]]:
        """Every memory's name -> (content hash, the models whose vectors it has), read inside the transaction."""
        cursor = self.conn.execute(
            self.scope.sql("SELECT name, hash, vectors FROM {memories} m").encode(), {"project": self.project}
        )
        return {str(name): (str(digest), str(vectors)) for name, digest, vectors in cursor}

    def delete(self, names: Sequence[str]) -> set[str]:
        """Drop these memories with their postings and chunks; the terms they held."""
        if not names:
            return set()
        held = self.conn.execute(
            "SELECT DISTINCT p.term FROM postings p JOIN memories m ON m.id = p.memory_id "
            "WHERE m.project = %s AND m.name = ANY(%s)",
            (self.project, list(names)),
        )
        terms = {str(row[0]) for row in held}
        self.conn.execute("DELETE FROM memories WHERE project = %s AND name = ANY(%s)", (self.project, list(names)))
        return terms

    def insert(self, rows: Sequence[Sequence[Any]]) -> dict[str, int]:
        """Add memory rows (``MEMORY_COLUMNS`` order); returns name -> row id."""
        with self.conn.cursor().copy(
            f"COPY memories (project, {', '.join(MEMORY_COLUMNS)}) FROM STDIN".encode()
        ) as copy:
            for row in rows:
                copy.write_row((self.project, *row))
        cursor = self.conn.execute(
            "SELECT name, id FROM memories WHERE project = %s AND name = ANY(%s)",
            (self.project, [row[0] for row in rows]),
        )
        return {str(name): int(mid) for name, mid in cursor}

    def graphless(self) -> list[str]:
        """The names of the memories whose graph rows no push has set (rows from before the graph came)."""
        cursor = self.conn.execute(
            "SELECT name FROM memories WHERE project = %s AND graph_keys IS NULL ORDER BY name", (self.project,)
        )
        return [str(row[0]) for row in cursor]

    def graph(self, rows: dict[str, tuple[str, str]]) -> None:
        """Set the graph rows (name -> keys, edges as JSON text) of these memories."""
        names = list(rows)
        self.conn.execute(
            "UPDATE memories m SET graph_keys = v.keys, graph_edges = v.edges "
            "FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(name, keys, edges) "
            "WHERE m.project = %s AND m.name = v.name",
            (names, [rows[n][0] for n in names], [rows[n][1] for n in names], self.project),
        )

    def postings(self, rows: Iterable[tuple[str, int, float, float]], lengths: Sequence[float]) -> set[str]:
        """(term, memory id, weighted term frequency, the memory's weighted length) rows, of memories whose
        lengths are ``lengths``; the terms written. Each posting's impact is computed against the project's
        reference length (``impact_length``), the mean of ``lengths`` when the project has none yet."""
        reference = self._impact_length(lengths)
        terms: set[str] = set()
        with self.conn.cursor().copy(
            b"COPY postings (project, term, memory_id, tf, length, impact) FROM STDIN"
        ) as copy:
            for term, memory_id, tf, length in rows:
                terms.add(term)
                copy.write_row((self.project, term, memory_id, tf, length, impact(tf, length, reference)))
        return terms

    def _impact_length(self, lengths: Sequence[float]) -> float:
        row = self.conn.execute("SELECT impact_length FROM projects WHERE project = %s", (self.project,)).fetchone()
        if row and row[0] > 0:
            return float(row[0])
        reference = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
        self.conn.execute("UPDATE projects SET impact_length = %s WHERE project = %s", (reference, self.project))
        return reference

    def statistics(self, terms: set[str]) -> None:
        """Recount the document frequency of ``terms`` and the project's memory count and mean length; when
        the mean has drifted past half or twice the impacts' reference length, recompute every impact."""
        every = len(terms) > _RECOUNT_ALL
        if terms or every:
            chosen = "" if every else " AND term = ANY(%(terms)s)"
            params = {"project": self.project, "terms": sorted(terms)}
            self.conn.execute(f"DELETE FROM terms WHERE project = %(project)s{chosen}".encode(), params)
            self.conn.execute(
                "INSERT INTO terms (project, term, df) SELECT project, term, count(*) FROM postings "
                f"WHERE project = %(project)s{chosen} GROUP BY project, term".encode(),
                params,
            )
        self.conn.execute(
            "UPDATE projects p SET memories = s.n, avgdl = s.avgdl FROM (SELECT count(*) AS n, "
            "coalesce(nullif(avg(length), 0), 1.0) AS avgdl FROM memories WHERE project = %(project)s) s "
            "WHERE p.project = %(project)s",
            {"project": self.project},
        )
        drifted = self.conn.execute(
            "SELECT avgdl FROM projects WHERE project = %s AND (avgdl > 2 * impact_length OR 2 * avgdl < impact_length)",
            (self.project,),
        ).fetchone()
        if drifted:
            self.conn.execute(
                f"UPDATE postings SET impact = {IMPACT.format(tf='tf', length='length', ref='%(ref)s')} "
                "WHERE project = %(project)s".encode(),
                {"ref": drifted[0], "project": self.project},
            )
            self.conn.execute("UPDATE projects SET impact_length = avgdl WHERE project = %s", (self.project,))

    def overviews_known(self) -> bool:
        """Whether a push has set this project's folder overviews (``overviews``) since the column came."""
        row = self.conn.execute("SELECT overviews_known FROM projects WHERE project = %s", (self.project,)).fetchone()
        return bool(row and row[0])

    def overviews(self) -> None:
        """Point each memory at the folder overview it borrows from (``memrouter.index.folders``), or at none."""

        # Without an overview in any folder (and none recorded), nothing lends: no need to read every name.
        if self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memories WHERE project = %s AND (overview_id IS NOT NULL "
            "OR (strpos(name, '/') > 0 AND lower(substring(name FROM '[^/]*$')) = ANY(%s))))",
            (self.project, sorted(OVERVIEW_NAMES)),
        ).fetchone() == (True,):
            named = self.conn.execute(
                "SELECT id, name FROM memories WHERE project = %s AND strpos(name, '/') > 0", (self.project,)
            )
            owner = FolderContext(((int(mid), str(name)) for mid, name in named), share=1.0).owner
            members, owners = list(owner), list(owner.values())
            self.conn.execute(
                "UPDATE memories SET overview_id = NULL WHERE project = %s AND overview_id IS NOT NULL "
                "AND NOT (id = ANY(%s))",
                (self.project, members),
            )
            self.conn.execute(
                "UPDATE memories m SET overview_id = v.owner FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, owner) "
                "WHERE m.project = %s AND m.id = v.id AND m.overview_id IS DISTINCT FROM v.owner",
                (members, owners, self.project),
            )
        self.conn.execute("UPDATE projects SET overviews_known = true WHERE project = %s", (self.project,))

    def chunks(self, rows: Iterable[tuple[int, str, int, int, str, int, str]]) -> None:
        """(memory id, model, ordinal, start, heading, dimension, vector text) rows."""
        with self.conn.cursor().copy(
            b"COPY chunks (project, memory_id, model, ordinal, start, heading, dimension, embedding) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row((self.project, *row))

    def bump(self) -> None:
        """Count one more change of this project's rows."""
        self.conn.execute("UPDATE projects SET generation = generation + 1, pushed_at = now() WHERE project = %s",
                          (self.project,))  # fmt: skip

    def recorded_mark(self) -> str:
        """The mark recorded by the last push ('' if none), read inside the transaction."""
        row = self.conn.execute("SELECT mark FROM projects WHERE project = %s", (self.project,)).fetchone()
        return str(row[0]) if row else ""

    def mark(self, mark: str) -> None:
        """Record the mark of the local index the rows now match."""
        self.conn.execute("UPDATE projects SET mark = %s WHERE project = %s", (mark, self.project))
