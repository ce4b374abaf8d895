"""The PostgreSQL schema: numbered migrations, each applied once, in order, under one lock.

Every table holds a ``project`` column (one database serves many repositories);
``memrouter.index.postgres.scope`` is the one place that adds it to every index
statement, and the views of ``schema_team`` to every team channel statement.
"""

from __future__ import annotations

from memrouter.index.postgres.impact import IMPACT
from memrouter.index.postgres.schema_team import TEAM_PLACES_SQL, TEAM_SQL

TYPE_CHECKING = False
if TYPE_CHECKING:
    import psycopg

__all__ = ["HNSW_EF_CONSTRUCTION", "HNSW_M", "MIGRATIONS", "hnsw_index", "migrate"]

# The HNSW graph: at a million chunks, 24 links and 200 build candidates reach recall@10 0.98 at
# ef_search 500 (pgvector's defaults, 16 and 64, stay below 0.85 at 400; ``benchmarks/bench_pg_scale.py``).
HNSW_M = 24
HNSW_EF_CONSTRUCTION = 200
# Any fixed key: concurrent processes migrating the same database wait for each other.
_MIGRATION_LOCK = 0x4D525452

_CORE = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE projects (
    project text PRIMARY KEY COLLATE "C",
    generation bigint NOT NULL DEFAULT 0,
    pushed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE memories (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project text NOT NULL COLLATE "C" REFERENCES projects(project) ON DELETE CASCADE,
    name text NOT NULL COLLATE "C",
    path text NOT NULL,
    hash text NOT NULL,
    size bigint NOT NULL,
    title text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    channel text NOT NULL,
    kind text,
    scope text NOT NULL,
    status text NOT NULL,
    source text,
    author text,
    confidence double precision NOT NULL DEFAULT 1.0,
    verified_by text,
    created text,
    updated text,
    valid_from text,
    valid_until text,
    supersedes text,
    superseded_by text,
    expires text,
    anchors text NOT NULL DEFAULT '[]',
    extra text NOT NULL DEFAULT '{}',
    problems text NOT NULL DEFAULT '[]',
    body text NOT NULL DEFAULT '',
    length double precision NOT NULL DEFAULT 0,
    vectors text NOT NULL DEFAULT '',
    UNIQUE (project, name)
);
CREATE INDEX memories_project_channel ON memories (project, channel);
CREATE TABLE postings (
    project text NOT NULL COLLATE "C",
    term text NOT NULL COLLATE "C",
    memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    tf real NOT NULL,
    PRIMARY KEY (project, term, memory_id)
);
CREATE INDEX postings_memory ON postings (memory_id);
CREATE TABLE chunks (
    project text NOT NULL COLLATE "C",
    memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    model text NOT NULL,
    ordinal integer NOT NULL,
    start integer NOT NULL,
    heading text NOT NULL,
    dimension integer NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (memory_id, model, ordinal)
);
CREATE INDEX chunks_project_model ON chunks (project, model);
"""

# The mark of the local index whose state the rows last took (``mirror.local_mark``): a process
# whose local index has that mark has nothing to copy, without comparing every row.
_MARK = "ALTER TABLE projects ADD COLUMN mark text NOT NULL DEFAULT '';"

# Lexical statistics kept with the rows, so a search reads only its terms' postings: each posting carries its
# memory's length, ``terms`` holds each term's document frequency, and the project row its memory count
# and mean length (all rewritten by each push, ``scope.Writer.statistics``). The postings' key includes
# what scoring reads, so a term's postings come from the index alone (an index-only scan).
_LEXICAL_STATISTICS = """
ALTER TABLE postings ADD COLUMN length double precision NOT NULL DEFAULT 0;
UPDATE postings p SET length = m.length FROM memories m WHERE m.id = p.memory_id;
ALTER TABLE postings DROP CONSTRAINT postings_pkey,
    ADD CONSTRAINT postings_pkey PRIMARY KEY (project, term, memory_id) INCLUDE (tf, length);
CREATE TABLE terms (
    project text NOT NULL COLLATE "C" REFERENCES projects(project) ON DELETE CASCADE,
    term text NOT NULL COLLATE "C",
    df integer NOT NULL,
    PRIMARY KEY (project, term)
);
INSERT INTO terms (project, term, df) SELECT project, term, count(*) FROM postings GROUP BY project, term;
ALTER TABLE projects ADD COLUMN memories bigint NOT NULL DEFAULT 0,
    ADD COLUMN avgdl double precision NOT NULL DEFAULT 1.0;
UPDATE projects p SET memories = s.n, avgdl = s.avgdl
FROM (SELECT project, count(*) AS n, coalesce(nullif(avg(length), 0), 1.0) AS avgdl FROM memories GROUP BY project) s
WHERE s.project = p.project;
"""

# Folders are context (``memrouter.index.folders``): each memory's folder overview, the row it borrows from,
# kept by each push that adds or drops memories (``scope.Writer.overviews``); ``overviews_known`` is false
# until a push has set them, and the cleared marks make the next search push, so a database migrated with
# rows in it gets them at once.
_FOLDER_OVERVIEWS = """
ALTER TABLE memories ADD COLUMN overview_id bigint;
CREATE INDEX memories_overview ON memories (overview_id) WHERE overview_id IS NOT NULL;
ALTER TABLE projects ADD COLUMN overviews_known boolean NOT NULL DEFAULT false;
UPDATE projects SET mark = '';
"""

# Postings in impact order (``memrouter.index.postgres.bm25``): each search reads a common word's best postings
# only. ``projects.impact_length`` is the mean length the impacts were computed with (``Writer.statistics``
# recomputes them when the project's mean drifts far from it). The key no longer needs to cover scoring.
_POSTINGS_IMPACT = f"""
ALTER TABLE postings ADD COLUMN impact real NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN impact_length double precision NOT NULL DEFAULT 0;
UPDATE projects SET impact_length = avgdl;
UPDATE postings p SET impact = {IMPACT.format(tf="p.tf", length="p.length", ref="r.impact_length")}
FROM projects r WHERE r.project = p.project;
CREATE INDEX postings_impact ON postings (project, term, impact DESC) INCLUDE (memory_id, tf, length);
ALTER TABLE postings DROP CONSTRAINT postings_pkey, ADD CONSTRAINT postings_pkey PRIMARY KEY (project, term, memory_id);
"""

# The sync mapping shared by every machine syncing a project (``memrouter.external.sync.pgstate``), the rows of
# the local index's ``sync_state`` and ``sync_remote`` with the project in their keys.
_SYNC_STATE = """
CREATE TABLE sync_state (
    project text NOT NULL COLLATE "C" REFERENCES projects(project) ON DELETE CASCADE,
    backend text NOT NULL COLLATE "C",
    name text NOT NULL COLLATE "C",
    hash text NOT NULL DEFAULT '',
    remote_ids text[] NOT NULL DEFAULT '{}',
    synced_at double precision,
    pending text,
    PRIMARY KEY (project, backend, name)
);
CREATE TABLE sync_remote (
    project text NOT NULL COLLATE "C" REFERENCES projects(project) ON DELETE CASCADE,
    backend text NOT NULL COLLATE "C",
    remote_id text NOT NULL COLLATE "C",
    name text NOT NULL COLLATE "C",
    part integer NOT NULL,
    PRIMARY KEY (project, backend, remote_id)
);
CREATE INDEX sync_remote_name ON sync_remote (project, backend, name);
"""

# The knowledge graph (``memrouter.index.graph.view``): each memory's keys and edges, as the local index's
# ``graph_rows`` holds them (JSON text), copied by each push; NULL until a push sets them, and the cleared
# marks make the next search push, so a database migrated with rows in it gets them at once. Each push
# asks for the rows still without them (``Writer.graphless``): a partial index answers that at no cost
# once there are none, where a scan would read every memory of the project.
_GRAPH = """
ALTER TABLE memories ADD COLUMN graph_keys text, ADD COLUMN graph_edges text;
CREATE INDEX memories_graphless ON memories (project) WHERE graph_keys IS NULL;
UPDATE projects SET mark = '';
"""

MIGRATIONS: list[tuple[str, str]] = [
    ("0001_projects_memories_postings_chunks", _CORE),
    ("0002_project_marks", _MARK),
    ("0003_team_channel", TEAM_SQL),  # the team channel's tables and per-project views (``schema_team``)
    ("0004_lexical_statistics", _LEXICAL_STATISTICS),
    ("0005_folder_overviews", _FOLDER_OVERVIEWS),
    ("0006_postings_impact", _POSTINGS_IMPACT),
    ("0007_sync_state", _SYNC_STATE),
    ("0008_knowledge_graph", _GRAPH),
    ("0009_team_places", TEAM_PLACES_SQL),  # each agent's branch and worktree, and a handoff's (``schema_team``)
]


def migrate(conn: psycopg.Connection[object]) -> list[str]:
    """Apply the migrations this database lacks (in one transaction, under an advisory lock); returns their names."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memrouter_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM memrouter_migrations")}  # type: ignore[index]
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            conn.execute(sql.encode())
            conn.execute("INSERT INTO memrouter_migrations (name) VALUES (%s)", (name,))
            applied.append(name)
    return applied


def hnsw_index(conn: psycopg.Connection[object], dimension: int, *, m: int = HNSW_M,
               ef_construction: int = HNSW_EF_CONSTRUCTION) -> None:  # fmt: skip
    """Make the HNSW index over chunks of one dimension (pgvector indexes a fixed dimension) if it is missing.

    Inside the caller's transaction; concurrent pushes of new vectors of one dimension wait for each other here.
    ``m`` and ``ef_construction``: the graph's links per node and its build-time candidate list.
    """
    name = f"chunks_hnsw_{int(dimension)}"
    if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() not in (None, (None,)):
        return
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {name} ON chunks USING hnsw "
        f"((embedding::vector({int(dimension)})) vector_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)}) WHERE dimension = {int(dimension)}".encode()
    )
