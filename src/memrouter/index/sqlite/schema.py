"""The index schema: named migrations, the mark that a file is ours, and deep checks.

Other modules add their tables by registering migrations (``MIGRATIONS``);
each runs once, in order, in its own transaction, and is recorded by name.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from memrouter.core.errors import IndexCorrupt
from memrouter.core.records import record
from memrouter.index.sqlite.access import USAGE_FILE, UsageFile
from memrouter.index.sqlite.connection import enable_wal, transaction
from memrouter.index.sqlite.filters import TIMED_CONDITION, TIMED_FIELDS
from memrouter.index.sqlite.refresh import rebuild_postings

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "REQUIRED_TABLES",
    "Migration",
    "check",
    "integrity_problems",
    "migrate",
    "schema_damaged",
]

# "MRTR": marks the file as a memrouter index (PRAGMA application_id).
APPLICATION_ID = 0x4D525452


@record
class Migration:
    """A named, ordered schema step: SQL text or a function of the connection."""

    name: str
    apply: str | Callable[[sqlite3.Connection], None]


_CORE = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    channel TEXT NOT NULL,
    kind TEXT,
    scope TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT,
    author TEXT,
    confidence REAL NOT NULL DEFAULT 1.0,
    verified_by TEXT,
    created TEXT,
    updated TEXT,
    valid_from TEXT,
    valid_until TEXT,
    supersedes TEXT,
    superseded_by TEXT,
    expires TEXT,
    anchors TEXT NOT NULL DEFAULT '[]',
    extra TEXT NOT NULL DEFAULT '{}',
    problems TEXT NOT NULL DEFAULT '[]',
    body TEXT NOT NULL DEFAULT '',
    length REAL NOT NULL DEFAULT 0,
    terms TEXT NOT NULL DEFAULT '',
    indexed_at REAL NOT NULL
);
CREATE INDEX memories_channel ON memories(channel);
CREATE INDEX memories_kind ON memories(kind);
CREATE TABLE memory_tags (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (memory_id, tag)
) WITHOUT ROWID;
CREATE INDEX memory_tags_tag ON memory_tags(tag);
CREATE TABLE terms (term TEXT PRIMARY KEY, postings BLOB NOT NULL) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('generation', '0');
"""

# Chunk embeddings for dense retrieval (see memrouter.index.sqlite.dense).
_DENSE = """
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    memory_hash TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    heading TEXT NOT NULL,
    model TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX chunks_memory ON chunks(memory_id, model);
CREATE INDEX chunks_model ON chunks(model);
"""

# Covering indexes for the two whole-table reads a fresh process makes before its
# first search (the stat comparison of a refresh, BM25 length norms): scanning
# them reads a few pages instead of every memory's body.
_COVERING = """
CREATE INDEX memories_stat ON memories(name, mtime_ns, size, hash);
CREATE INDEX memories_length ON memories(length);
"""


def _checked_postings(conn: sqlite3.Connection) -> None:
    """Postings blobs gain a CRC-32 trailer: rebuild them all from the memory rows."""

    rebuild_postings(conn)


def _epoch(conn: sqlite3.Connection) -> None:
    """A random id for this index file: caches keyed on the generation counter
    must not match the files of an index that was deleted and rebuilt."""
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', ?)", (os.urandom(8).hex(),))


MIGRATIONS: list[Migration] = [
    Migration("0001_memories_and_postings", _CORE),
    Migration("0002_dense_chunks", _DENSE),
    Migration("0003_covering_indexes", _COVERING),
    Migration("0004_checked_postings", _checked_postings),
    Migration("0005_index_epoch", _epoch),
]

# Sync state per external backend (see memrouter.external.sync.state for how it is used).
_SYNC_STATE = """
CREATE TABLE sync_state (
    backend TEXT NOT NULL,
    name TEXT NOT NULL,
    hash TEXT NOT NULL DEFAULT '',
    remote_ids TEXT NOT NULL DEFAULT '[]',
    synced_at REAL,
    pending TEXT,
    PRIMARY KEY (backend, name)
) WITHOUT ROWID;
CREATE TABLE sync_remote (
    backend TEXT NOT NULL,
    remote_id TEXT NOT NULL,
    name TEXT NOT NULL,
    part INTEGER NOT NULL,
    PRIMARY KEY (backend, remote_id)
) WITHOUT ROWID;
CREATE INDEX sync_remote_name ON sync_remote(backend, name);
"""
MIGRATIONS.append(Migration("0100_sync_state", _SYNC_STATE))

# The knowledge graph (see memrouter.index.graph.extract): each memory's typed
# references to keys, and the keys each memory answers to. An edge resolves to
# a memory by joining its target on graph_keys, so a forward reference resolves
# as soon as its target is indexed, without touching the referring memory.
_GRAPH = """
CREATE TABLE graph_edges (
    id INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    target TEXT NOT NULL,
    label TEXT NOT NULL,
    line INTEGER NOT NULL,
    detail TEXT
);
CREATE INDEX graph_edges_memory ON graph_edges(memory_id);
CREATE TABLE graph_keys (
    key TEXT NOT NULL,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    PRIMARY KEY (key, memory_id)
) WITHOUT ROWID;
CREATE INDEX graph_keys_memory ON graph_keys(memory_id);
-- Memories indexed before the graph existed are re-read by the next refresh.
UPDATE memories SET mtime_ns = -1, hash = '';
"""
MIGRATIONS.append(Migration("0200_knowledge_graph", _GRAPH))
# The graph is read whole into memory (memrouter.index.graph.view.GraphView): the
# index on edge targets that 0200 once made only slowed every write.
MIGRATIONS.append(Migration("0201_graph_edges_unindexed_targets", "DROP INDEX IF EXISTS graph_edges_target;"))
# One row per memory, its keys and edges as JSON: a full build writes 1,026 rows
# instead of some 12,000 indexed ones, and the view reads them back whole.
_GRAPH_ROWS = """
DROP TABLE IF EXISTS graph_edges;
DROP TABLE IF EXISTS graph_keys;
CREATE TABLE graph_rows (
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    keys TEXT NOT NULL,
    edges TEXT NOT NULL
);
UPDATE memories SET mtime_ns = -1, hash = '';
"""
MIGRATIONS.append(Migration("0202_graph_rows", _GRAPH_ROWS))

# Record time from git (memrouter.index.sqlite.recordtime): each memory's commit times, read at meta 'record_head'.
_RECORD_TIMES = """
CREATE TABLE record_times (
    name TEXT PRIMARY KEY,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    commits TEXT NOT NULL
) WITHOUT ROWID;
"""
MIGRATIONS.append(Migration("0300_record_times", _RECORD_TIMES))

# How often each memory was returned by get or search, and when last (see
# memrouter.index.sqlite.access). Keyed by name: a memory rewritten keeps its history.
_ACCESS = """
CREATE TABLE memory_access (
    name TEXT PRIMARY KEY,
    count INTEGER NOT NULL DEFAULT 0,
    last_access REAL NOT NULL
) WITHOUT ROWID;
"""
MIGRATIONS.append(Migration("0400_access_counts", _ACCESS))

# The write guard looks up memories by title (case aside) on every write: an index, not a table scan.
MIGRATIONS.append(Migration("0401_title_index", "CREATE INDEX memories_title ON memories(title COLLATE NOCASE);"))


def _usage_moves_out(conn: sqlite3.Connection) -> None:
    """The access counts move to ``usage.sqlite`` beside the index, so a search never writes the index
    (``memrouter.index.sqlite.access``); the counts already kept go with them."""
    rows = conn.execute("SELECT name, count, last_access FROM memory_access").fetchall()
    folder = next(
        (Path(row[2]).parent for row in conn.execute("PRAGMA database_list") if row[1] == "main" and row[2]), None
    )
    if rows and folder is not None:
        usage = UsageFile(folder / USAGE_FILE)
        try:
            usage.conn.executemany(
                "INSERT INTO memory_access (name, count, last_access) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                "count = count + excluded.count, last_access = max(last_access, excluded.last_access)",
                [tuple(row) for row in rows],
            )
        finally:
            usage.close()
    conn.execute("DROP TABLE memory_access")


# Word-piece vectors of a chunk for the reranker (memrouter.index.sqlite.rerank), written only while it is on.
_CHUNK_TOKENS = """
CREATE TABLE chunk_tokens (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    tokens BLOB NOT NULL
);
"""
MIGRATIONS.append(Migration("0402_chunk_tokens", _CHUNK_TOKENS))
MIGRATIONS.append(Migration("0500_usage_moves_out", _usage_moves_out))

# What a cold search reads of every memory comes from indexes alone, never from the rows (whose bodies a
# scan would walk): the lengths and names of BM25's norms and folders, and the columns of the in-effect
# rules a default search filters by (``memrouter.index.sqlite.filters``), with the memories another supersedes.
_NARROW_READS = """
CREATE INDEX memories_norms ON memories(length, name);
DROP INDEX memories_length;
CREATE INDEX memories_effect ON memories(channel, status, superseded_by, name);
DROP INDEX memories_channel;
CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
"""
MIGRATIONS.append(Migration("0501_narrow_reads", _NARROW_READS))

# Anchor freshness (memrouter.index.sqlite.anchors), all of it derived from git and rebuilt when missing:
# cached state (the path history, the definition-name map), each blob's parsed definitions, each memory
# text's inferred anchors, and the last verification of each memory.
_ANCHORS = """
CREATE TABLE anchor_cache (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE anchor_definitions (blob TEXT PRIMARY KEY, language TEXT NOT NULL, definitions TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE anchor_inferred (hash TEXT PRIMARY KEY, anchors TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE anchor_states (
    name TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    status TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    head TEXT,
    baseline TEXT,
    watched TEXT NOT NULL DEFAULT '[]',
    result TEXT NOT NULL,
    checked_at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX anchor_states_open ON anchor_states(status) WHERE status != 'fresh';
"""
MIGRATIONS.append(Migration("0502_anchor_freshness", _ANCHORS))

# The time bounds a default search applies itself (``LexicalIndex.allowed``) come from a partial index of the
# few memories that set one, not from a scan of every row: the query's condition is the index's, word for word
# (``filters.TIMED_CONDITION``), which is what lets SQLite use it.
MIGRATIONS.append(
    Migration(
        "0503_timed_reads",
        f"CREATE INDEX memories_timed ON memories({', '.join(TIMED_FIELDS)}) WHERE {TIMED_CONDITION};",
    )
)

# Tables every index must have; a missing one is damage (see ``schema_damaged``).
REQUIRED_TABLES = (
    "meta", "memories", "memory_tags", "terms", "chunks", "sync_state", "sync_remote", "graph_rows",
    "record_times",
)  # fmt: skip


def schema_damaged(conn: sqlite3.Connection) -> bool:
    """True when one of the index's own tables is missing (a "no such table" error's real cause)."""
    try:
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError:
        return True
    return not set(REQUIRED_TABLES) <= present


def check(conn: sqlite3.Connection) -> None:
    """Raise ``IndexCorrupt`` unless the file is an empty database or one of ours."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if tables and app_id != APPLICATION_ID:
        raise IndexCorrupt("the file is a database, but not a memrouter index")


def migrate(conn: sqlite3.Connection, migrations: list[Migration], *, wal: bool = True) -> None:
    if wal:
        enable_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
    done: set[str] = set()
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").fetchone():
        done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    unknown = done - {m.name for m in migrations}
    if unknown:
        raise IndexCorrupt(f"written by a newer memrouter (unknown migrations: {', '.join(sorted(unknown))})")
    for migration in migrations:
        if migration.name in done:
            continue
        with transaction(conn):
            # Marked as ours in the same transaction as the first table, so no
            # reader ever sees a half-made index without its mark.
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            if callable(migration.apply):
                migration.apply(conn)
            else:
                for statement in _statements(migration.apply):
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (migration.name, time.time())
            )


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check``'s findings (empty when the file is sound)."""
    rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(20)")]
    return [] if rows == ["ok"] else rows
