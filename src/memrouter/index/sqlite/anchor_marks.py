"""What a search, the context and ``status`` read of anchor freshness: the stored states, nothing else.

``memrouter verify`` stores each memory's state in ``anchor_states`` (``memrouter.index.sqlite.anchors``);
these reads cost a query each and import nothing beyond SQLite, so a cold search loads no more than before.
"""

from __future__ import annotations

import sqlite3

__all__ = ["by_name", "marks", "open_count", "state_counts"]

_CHUNK = 500


def open_count(conn: sqlite3.Connection) -> int:
    """How many memories' last check found them stale or broken (the search's extra candidates)."""
    row = conn.execute("SELECT count(*) FROM anchor_states WHERE status != 'fresh'").fetchone()
    return int(row[0]) if row else 0


def marks(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple[str, str]]:
    """Memory id -> (state, summary) for the given memories whose last check (of their current text) found
    them stale or broken."""
    if not ids:
        return {}
    found: dict[int, tuple[str, str]] = {}
    for start in range(0, len(ids), _CHUNK):
        part = ids[start : start + _CHUNK]
        rows = conn.execute(
            "SELECT m.id, s.status, s.summary FROM anchor_states AS s JOIN memories AS m ON m.name = s.name"
            f" WHERE s.status != 'fresh' AND s.hash = m.hash AND m.id IN ({', '.join('?' * len(part))})",
            part,
        )
        found.update({int(mid): (str(status), str(summary)) for mid, status, summary in rows})
    return found


def state_counts(conn: sqlite3.Connection) -> dict[str, object]:
    """Anchored memories by their last check's state, and the commit of the newest check."""
    counts = {
        str(status): int(n) for status, n in conn.execute("SELECT status, count(*) FROM anchor_states GROUP BY status")
    }
    row = conn.execute("SELECT head, max(checked_at) FROM anchor_states").fetchone()
    return {"counts": counts, "head": row[0] if row else None, "checked_at": row[1] if row else None}


def by_name(conn: sqlite3.Connection, names: list[str]) -> dict[str, str]:
    """Name -> summary for the named memories whose last check (of their current text) found them stale or broken."""
    found: dict[str, str] = {}
    for start in range(0, len(names), _CHUNK):
        part = names[start : start + _CHUNK]
        rows = conn.execute(
            "SELECT s.name, s.summary, s.status FROM anchor_states AS s JOIN memories AS m ON m.name = s.name"
            f" WHERE s.status != 'fresh' AND s.hash = m.hash AND s.name IN ({', '.join('?' * len(part))})",
            part,
        )
        found.update({str(name): str(summary or status) for name, summary, status in rows})
    return found
