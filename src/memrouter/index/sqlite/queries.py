"""The index's read queries the Router needs, in one place (no SQL in the router)."""

from __future__ import annotations

import sqlite3

from memrouter.core.model import CHANNELS, STATUSES, Filters, MemorySummary
from memrouter.index.sqlite.filters import filter_sql

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "brief_rows", "channels_in_use", "chunk_spans", "consolidation_rows", "counts", "current_hashes", "generation", "hit_rows", "ids_of", "is_empty",
    "long_term_twins",
    "names_of", "pinned_names", "problems", "summaries", "validity_rows",
]  # fmt: skip


def generation(conn: sqlite3.Connection) -> str:
    """The index generation: bumped by every transaction that changes memories."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return str(row[0]) if row else "0"


def hit_rows(conn: sqlite3.Connection, ids: list[int]) -> dict[int, sqlite3.Row]:
    """The fields a hit shows, for the memories ``ids``."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    cursor = conn.execute(
        "SELECT id, name, title, channel, path, hash, kind, body, author, source, created, updated, confidence,"
        f" verified_by FROM memories WHERE id IN ({marks})",
        ids,
    )
    return {row["id"]: row for row in cursor}


def chunk_spans(conn: sqlite3.Connection, chunk_ids: list[int]) -> dict[int, tuple[int, int, str | None]]:
    """Each chunk's (start, end) in its memory's body and its heading."""
    if not chunk_ids:
        return {}
    marks = ", ".join("?" * len(chunk_ids))
    rows = conn.execute(f"SELECT id, start, end, heading FROM chunks WHERE id IN ({marks})", chunk_ids)
    return {row[0]: (int(row[1]), int(row[2]), row[3]) for row in rows}


def ids_of(conn: sqlite3.Connection, names: list[str]) -> dict[str, int]:
    """The row ids of the indexed memories among ``names``."""
    found: dict[str, int] = {}
    for start in range(0, len(names), 500):
        batch = names[start : start + 500]
        marks = ", ".join("?" * len(batch))
        found.update(conn.execute(f"SELECT name, id FROM memories WHERE name IN ({marks})", batch).fetchall())
    return found


def names_of(conn: sqlite3.Connection, ids: frozenset[int]) -> list[str]:
    """The names of the memories ``ids`` (those still indexed)."""
    wanted = set(ids)
    return [name for mid, name in conn.execute("SELECT id, name FROM memories") if mid in wanted]


def brief_rows(conn: sqlite3.Connection, ids: list[int]) -> dict[int, sqlite3.Row]:
    """Channel and content hash of the memories ``ids``: what reordering a candidate pool needs (no bodies)."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    return {
        row["id"]: row for row in conn.execute(f"SELECT id, channel, hash FROM memories WHERE id IN ({marks})", ids)
    }


def summaries(conn: sqlite3.Connection, filters: Filters) -> list[MemorySummary]:
    """The indexed memories passing ``filters``, by name."""
    import json

    where, params = filter_sql(filters)
    rows = conn.execute(
        "SELECT name, title, channel, kind, status, tags, hash, path, size FROM memories m "
        f"WHERE 1{where} ORDER BY name",
        params,
    ).fetchall()
    return [
        MemorySummary(
            name=row["name"],
            title=row["title"],
            channel=row["channel"],
            kind=row["kind"],
            status=row["status"],
            tags=tuple(json.loads(row["tags"])),
            hash=row["hash"],
            path=row["path"],
            size=row["size"],
        )  # fmt: skip
        for row in rows
    ]


def counts(conn: sqlite3.Connection) -> dict[str, Any]:
    """Memories in all, by channel and by status."""
    total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    by_channel = dict(conn.execute("SELECT channel, count(*) FROM memories GROUP BY channel").fetchall())
    by_status = dict(conn.execute("SELECT status, count(*) FROM memories GROUP BY status").fetchall())
    return {
        "total": total,
        "by_channel": {c: by_channel.get(c, 0) for c in CHANNELS},
        "by_status": {s: by_status.get(s, 0) for s in STATUSES},
    }


def problems(conn: sqlite3.Connection) -> dict[str, str]:
    """What could not be parsed or read, by memory name (or file)."""
    import json

    found = {
        row[0]: "; ".join(json.loads(row[1]))
        for row in conn.execute("SELECT name, problems FROM memories WHERE problems != '[]' ORDER BY name")
    }
    stored = conn.execute("SELECT value FROM meta WHERE key = 'file_problems'").fetchone()
    if stored:
        found.update(json.loads(stored[0]))
    return found


def migrations(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


def current_hashes(conn: sqlite3.Connection) -> dict[str, str]:
    """Every indexed memory's name and content hash."""
    return {row[0]: row[1] for row in conn.execute("SELECT name, hash FROM memories")}


def record_file_problems(conn: sqlite3.Connection, unreadable: dict[str, str]) -> None:
    """Keep the files that could not be indexed, for ``status`` in any process (inside a transaction)."""
    import json

    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('file_problems', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (json.dumps(unreadable),),
    )


def validity_rows(conn: sqlite3.Connection, names: list[str]) -> dict[str, sqlite3.Row]:
    """What decides whether each named memory is in effect, with ``linked`` set when another supersedes it."""
    if not names:
        return {}
    marks = ", ".join("?" * len(names))
    cursor = conn.execute(
        "SELECT name, status, superseded_by, valid_from, valid_until, expires, "
        "name IN (SELECT s.supersedes FROM memories s WHERE s.supersedes IS NOT NULL) AS linked "
        f"FROM memories WHERE name IN ({marks})",
        names,
    )
    return {row["name"]: row for row in cursor}


def long_term_twins(conn: sqlite3.Connection, file_hash: str, body: str, title: str) -> tuple[str, str] | None:
    """A long-term memory with this file hash, this body or this title (case aside), and how it matches."""
    row = conn.execute(
        "SELECT name, hash = ? OR body = ? AS same FROM memories WHERE channel = 'long_term' "
        "AND (hash = ? OR body = ? OR lower(title) = lower(?)) ORDER BY same DESC, name LIMIT 1",
        (file_hash, body, file_hash, body, title),
    ).fetchone()
    if row is None:
        return None
    return str(row["name"]), "has the same content" if row["same"] else f"has the same title ({title!r})"


def pinned_names(conn: sqlite3.Connection) -> list[str]:
    """Memories whose front matter says ``pinned: true`` (and are not retired), by name."""
    rows = conn.execute(
        "SELECT name FROM memories WHERE json_extract(extra, '$.pinned') = 1 AND status NOT IN ('obsolete', 'archived', 'pending_review') "
        "AND superseded_by IS NULL ORDER BY name"
    )
    return [row[0] for row in rows]


def consolidation_rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every memory with what the janitor compares (``memrouter.ops.janitor``), ``linked`` set when another supersedes it."""
    return conn.execute(
        "SELECT name, title, body, hash, tags, channel, kind, status, created, updated, mtime_ns, valid_until, "
        "expires, superseded_by, extra, "
        "name IN (SELECT s.supersedes FROM memories s WHERE s.supersedes IS NOT NULL) AS linked "
        "FROM memories ORDER BY name"
    ).fetchall()


def channels_in_use(conn: sqlite3.Connection) -> set[str]:
    """The channels the indexed memories are in."""
    return {row[0] for row in conn.execute("SELECT DISTINCT channel FROM memories")}


def is_empty(conn: sqlite3.Connection) -> bool:
    """True when the index holds no memory (never built, or built over no files)."""
    return conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is None
