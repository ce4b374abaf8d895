"""The index database: one SQLite file in WAL mode, built by named migrations.

The index is derived data. Anything that is not recognisably ours (a foreign
file, a damaged file, a schema from a newer memrouter) is moved aside and
rebuilt from the memory files, with a warning: never trusted, never fatal.
Other modules add their tables by registering migrations (``MIGRATIONS``);
each runs once, in order, and is recorded by name.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from memrouter.errors import IndexCorrupt
from memrouter.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Migration", "MIGRATIONS", "APPLICATION_ID", "open_index", "connect"]

log = LazyLogger(__name__)

# "MRTR": marks the file as a memrouter index (PRAGMA application_id).
APPLICATION_ID = 0x4D525452


@dataclass(frozen=True, slots=True)
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

# Chunk embeddings for dense retrieval (see memrouter.index.dense).
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

MIGRATIONS: list[Migration] = [
    Migration("0001_memories_and_postings", _CORE),
    Migration("0002_dense_chunks", _DENSE),
    Migration("0003_covering_indexes", _COVERING),
]

# Sync state per external backend (see memrouter.sync.state for how it is used).
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


def connect(path: Path) -> sqlite3.Connection:
    """Open a connection with the settings every index connection uses."""
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA cache_size = -32768")  # 32 MiB: index builds touch many pages
    return conn


def _check(conn: sqlite3.Connection) -> None:
    """Raise ``IndexCorrupt`` unless the file is an empty database or one of ours."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise IndexCorrupt(f"not a database: {exc}") from exc
    if tables and app_id != APPLICATION_ID:
        raise IndexCorrupt("the file is a database, but not a memrouter index")
    # Damage deeper in the file surfaces as sqlite3.DatabaseError on use; the
    # router answers that by rebuilding (see Router._recover).


def _migrate(conn: sqlite3.Connection, migrations: list[Migration]) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    known = {m.name for m in migrations}
    unknown = done - known
    if unknown:
        raise IndexCorrupt(f"written by a newer memrouter (unknown migrations: {', '.join(sorted(unknown))})")
    for migration in migrations:
        if migration.name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if callable(migration.apply):
                migration.apply(conn)
            else:
                for statement in _statements(migration.apply):
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (migration.name, time.time())
            )
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


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


def open_index(path: Path, migrations: list[Migration] | None = None) -> tuple[sqlite3.Connection, str | None]:
    """Open (creating or repairing) the index at ``path``.

    Returns the connection and a warning when the old file had to be moved
    aside and the index started afresh.
    """
    migrations = MIGRATIONS if migrations is None else migrations
    path.parent.mkdir(parents=True, exist_ok=True)
    warning = None
    try:
        conn = connect(path)
    except sqlite3.DatabaseError as exc:
        aside = _move_aside(path)
        warning = f"index {path} was unusable ({exc}); moved to {aside.name} and rebuilt from the memory files"
        log.warning(warning)
        conn = connect(path)
    try:
        _check(conn)
        _migrate(conn, migrations)
    except (IndexCorrupt, sqlite3.DatabaseError) as exc:
        conn.close()
        aside = _move_aside(path)
        warning = f"index {path} was unusable ({exc}); moved to {aside.name} and rebuilt from the memory files"
        log.warning(warning)
        conn = connect(path)
        _migrate(conn, migrations)
    return conn, warning


def _move_aside(path: Path) -> Path:
    aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    path.replace(aside)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.unlink()
    return aside
