"""Anchor freshness in the local index: derived from git, cached here, rebuilt when missing.

- ``anchor_cache``: the path history (``memrouter.repo.history``) and the map of defined names
  (``memrouter.anchors.names``), each with the commit it was read at, compressed JSON;
- ``anchor_definitions``: each blob's definitions (a blob never changes);
- ``anchor_inferred``: the anchors each memory text infers (by its content hash);
- ``anchor_states``: the last verification of each memory (its result as JSON, and its state and
  one-line summary for search, context and status).

A search reads only ``anchor_states``, for the candidates it ranks (``memrouter.index.sqlite.anchor_marks``):
no git, no parser.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Iterable

from memrouter.anchors.records import MemoryCheck
from memrouter.anchors.spec import Anchor
from memrouter.anchors.symbols import Definition
from memrouter.index.sqlite.anchor_marks import bump_version

__all__ = [
    "cached", "definitions", "inferred", "save_cached", "save_definitions", "save_inferred", "carry_states", "save_states", "states", "watched",
]  # fmt: skip

_CHUNK = 500


def cached(conn: sqlite3.Connection, key: str) -> dict[str, object] | None:
    """The cached data under ``key`` (None when absent or unreadable: it is rebuilt)."""
    row = conn.execute("SELECT value FROM anchor_cache WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    try:
        data = json.loads(zlib.decompress(row[0]))
    except (zlib.error, ValueError):
        return None
    return data if isinstance(data, dict) else None


def has_cached(conn: sqlite3.Connection, key: str) -> bool:
    """Whether data is cached under ``key`` (without reading it)."""
    return conn.execute("SELECT 1 FROM anchor_cache WHERE key = ?", (key,)).fetchone() is not None


def save_cached(conn: sqlite3.Connection, key: str, data: dict[str, object]) -> None:
    blob = zlib.compress(json.dumps(data, separators=(",", ":")).encode("utf-8", "surrogateescape"), 1)
    conn.execute("INSERT OR REPLACE INTO anchor_cache (key, value) VALUES (?, ?)", (key, blob))


def definitions(conn: sqlite3.Connection, blob: str) -> dict[str, Definition] | None:
    """The definitions parsed from blob ``blob`` before, or None."""
    row = conn.execute("SELECT definitions FROM anchor_definitions WHERE blob = ?", (blob,)).fetchone()
    if row is None:
        return None
    try:
        return {
            name: Definition(first, last, tuple((int(a), int(b)) for a, b in ranges))
            for name, (first, last, ranges) in json.loads(row[0]).items()
        }
    except (ValueError, TypeError):
        return None


def save_definitions(conn: sqlite3.Connection, found: dict[str, tuple[str, dict[str, Definition]]]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO anchor_definitions (blob, language, definitions) VALUES (?, ?, ?)",
        [
            (
                blob,
                language,
                json.dumps({n: [d.first, d.last, d.ranges] for n, d in items.items()}, separators=(",", ":")),
            )
            for blob, (language, items) in found.items()
        ],
    )


def inferred(conn: sqlite3.Connection, hashes: Iterable[str], context: str) -> dict[str, list[Anchor]]:
    """The inferred anchors of the memory texts with these content hashes, cached under ``context`` (what
    inference read them against)."""
    wanted = [f"{context}:{value}" for value in hashes]
    found: dict[str, list[Anchor]] = {}
    for start in range(0, len(wanted), _CHUNK):
        part = wanted[start : start + _CHUNK]
        marks = ", ".join("?" * len(part))
        for key, anchors in conn.execute(f"SELECT hash, anchors FROM anchor_inferred WHERE hash IN ({marks})", part):
            try:
                found[key.split(":", 1)[1]] = [Anchor.from_data(item) for item in json.loads(anchors)]
            except (ValueError, TypeError, KeyError):
                continue
    return found


def save_inferred(conn: sqlite3.Connection, context: str, found: dict[str, list[Anchor]]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO anchor_inferred (hash, anchors) VALUES (?, ?)",
        [(f"{context}:{value}", json.dumps([a.to_data() for a in anchors])) for value, anchors in found.items()],
    )


def states(
    conn: sqlite3.Connection, names: Iterable[str] | None = None
) -> dict[str, tuple[str, MemoryCheck, list[str], str | None, str | None]]:
    """name -> (memory hash, its last check, the paths it watches, the head it was checked at, its baseline)."""
    query = "SELECT name, hash, result, watched, head, baseline FROM anchor_states"
    rows: list[sqlite3.Row | tuple[object, ...]] = []
    if names is None:
        rows = list(conn.execute(query))
    else:
        wanted = list(names)
        for start in range(0, len(wanted), _CHUNK):
            part = wanted[start : start + _CHUNK]
            rows += list(conn.execute(f"{query} WHERE name IN ({', '.join('?' * len(part))})", part))
    found: dict[str, tuple[str, MemoryCheck, list[str], str | None, str | None]] = {}
    for name, value, result, watched, head, baseline in rows:
        try:
            found[str(name)] = (str(value), MemoryCheck.from_dict(json.loads(str(result))), json.loads(str(watched)),
                                head if isinstance(head, str) else None, baseline if isinstance(baseline, str) else None)  # fmt: skip
        except (ValueError, TypeError, KeyError):
            continue
    return found


def watched(conn: sqlite3.Connection) -> set[str]:
    """Every path some stored state watches (the anchored files and the memory files)."""
    found: set[str] = set()
    for (value,) in conn.execute("SELECT watched FROM anchor_states"):
        try:
            found.update(str(path) for path in json.loads(value))
        except (ValueError, TypeError):
            continue
    return found


def carry_states(conn: sqlite3.Connection, carried: list[tuple[str, MemoryCheck]], head: str | None) -> None:
    """Mark kept states as checked at ``head``: the head alone for those whose summary did not change, the
    summary and result too for those whose "commits ago" did."""
    if not carried:
        return
    conn.executemany(
        "UPDATE anchor_states SET head = ?, summary = ?, result = ? WHERE name = ?",
        [(head, check.summary, json.dumps(check.to_dict()), name) for name, check in carried if check.ago is not None],
    )
    conn.executemany(
        "UPDATE anchor_states SET head = ? WHERE name = ?",
        [(head, name) for name, check in carried if check.ago is None],
    )
    bump_version(conn)


def save_states(
    conn: sqlite3.Connection, checked: list[tuple[str, MemoryCheck, list[str], str | None]], head: str | None,
    *, keep: set[str] | None = None,
) -> None:  # fmt: skip
    """Store each (memory hash, check, watched paths, baseline); with ``keep``, drop every other memory's state."""
    now = time.time()
    conn.executemany(
        "INSERT OR REPLACE INTO anchor_states (name, hash, status, summary, head, baseline, watched, result, checked_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                check.name,
                value,
                check.status,
                check.summary,
                head,
                baseline,
                json.dumps(watched),
                json.dumps(check.to_dict()),
                now,
            )
            for value, check, watched, baseline in checked
        ],  # fmt: skip
    )
    if keep is not None:
        gone = [row[0] for row in conn.execute("SELECT name FROM anchor_states") if row[0] not in keep]
        conn.executemany("DELETE FROM anchor_states WHERE name = ?", [(name,) for name in gone])
    bump_version(conn)
