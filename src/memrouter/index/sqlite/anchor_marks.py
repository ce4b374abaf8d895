"""What a search, the context and ``status`` read of anchor freshness: the stored states, nothing else.

``memrouter verify`` stores each memory's state in ``anchor_states`` (``memrouter.index.sqlite.anchors``);
these reads cost a query each and import nothing beyond SQLite, so a cold search loads no more than before.
"""

from __future__ import annotations

import sqlite3

__all__ = ["VERSION_KEY", "StaleMarks", "bump_version", "by_name", "state_counts"]

VERSION_KEY = "anchor_states"  # meta: changes whenever `verify` stores states

_CHUNK = 500


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
            f" WHERE s.status IN ('stale', 'broken') AND s.hash = m.hash AND s.name IN ({', '.join('?' * len(part))})",
            part,
        )
        found.update({str(name): str(summary or status) for name, summary, status in rows})
    return found


def bump_version(conn: sqlite3.Connection) -> None:
    """Say the stored states changed (inside the transaction that changed them)."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET"
        " value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
        (VERSION_KEY,),
    )


class StaleMarks:
    """Memory id -> (state, summary) of every memory the last check found stale or broken, read once per index
    generation and states version: a search then pays one small read of ``meta``."""

    def __init__(self) -> None:
        self._key: tuple[object, object] | None = None
        self._marks: dict[int, tuple[str, str]] = {}

    def current(self, conn: sqlite3.Connection) -> dict[int, tuple[str, str]]:
        row = conn.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'generation'), (SELECT value FROM meta WHERE key = ?)",
            (VERSION_KEY,),
        ).fetchone()
        key = (row[0], row[1]) if row else (None, None)
        if key != self._key:
            rows = conn.execute(
                "SELECT m.id, s.status, s.summary FROM anchor_states AS s JOIN memories AS m ON m.name = s.name"
                " WHERE s.status IN ('stale', 'broken') AND s.hash = m.hash"
            )
            self._marks = {int(mid): (str(status), str(summary or status)) for mid, status, summary in rows}
            self._key = key
        return self._marks
