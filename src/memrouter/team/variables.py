"""Shared variables: JSON values with a version each, compare-and-set, optional TTL."""

from __future__ import annotations

from typing import Any

from memrouter.core.errors import NotFound, VersionConflict
from memrouter.team.checks import check_int, check_key, check_seconds, decode, encode
from memrouter.team.records import Variable
from memrouter.team.sql import Conn, Row
from memrouter.team.workflows import active_workflow, check_room

__all__ = ["delete", "get", "list_", "set_"]

_LIVE = "(expires_at IS NULL OR expires_at > ?)"
MAX_VERSION = 2**62


def _conflict(key: str, expected: int, current: int) -> VersionConflict:
    state = f"version {current}" if current else "no value"
    return VersionConflict(f"{key!r} has {state}, not the expected version {expected}", current)


def _row(row: Row) -> Variable:
    return Variable(
        key=row["key"], value=decode(row["value"]), version=row["version"], owner=row["owner"],
        workflow_id=row["workflow_id"], updated_at=row["updated_at"], expires_at=row["expires_at"],
    )  # fmt: skip


def _current(conn: Conn, now: float, key: str) -> Row | None:
    row: Row | None = conn.execute(
        f"SELECT * FROM variables WHERE key = ? AND {_LIVE}", (key, now)
    ).fetchone()  # fmt: skip
    return row


def set_(
    conn: Conn,
    now: float,
    key: str,
    value: Any,
    expected_version: int | None,
    ttl: float | None,
    owner: str | None,
    workflow: str | None,
) -> Variable:
    """Write ``value``; with ``expected_version`` only if the live version is that (0: absent)."""
    check_key(key)
    text = encode(value, "the value")
    if expected_version is not None:
        check_int(expected_version, "expected_version", low=0, high=MAX_VERSION)
    check_seconds(ttl, "ttl", required=False)
    row = _current(conn, now, key)
    version = row["version"] if row is not None else 0
    if expected_version is not None and expected_version != version:
        raise _conflict(key, expected_version, version)
    if workflow is not None:
        active_workflow(conn, workflow)
        if row is None or row["workflow_id"] != workflow:
            check_room(conn, workflow)
    expires_at = now + ttl if ttl is not None else None
    # An expired row's version carries on, so an old expected_version can never match a new value.
    # An update, else an insert: the caller's transaction holds the project's write lock (see agents.register).
    updated = conn.execute(
        "UPDATE variables SET value = ?, version = version + 1, owner = ?, workflow_id = ?, updated_at = ?, "
        "expires_at = ? WHERE key = ?",
        (text, owner, workflow, now, expires_at, key),
    ).rowcount
    if not updated:
        conn.execute(
            "INSERT INTO variables (key, value, version, owner, workflow_id, updated_at, expires_at) "
            "VALUES (?, ?, 1, ?, ?, ?, ?)",
            (key, text, owner, workflow, now, expires_at),
        )
    stored = conn.execute("SELECT * FROM variables WHERE key = ?", (key,)).fetchone()
    return _row(stored)


def get(conn: Conn, now: float, key: str) -> Variable:
    check_key(key)
    row = _current(conn, now, key)
    if row is None:
        raise NotFound(f"no team variable {key!r}")
    return _row(row)


def list_(conn: Conn, now: float, prefix: str, limit: int) -> tuple[Variable, ...]:
    if prefix:
        check_key(prefix)
    upper = prefix + "\U0010ffff"
    rows = conn.execute(
        f"SELECT * FROM variables WHERE key >= ? AND key < ? AND {_LIVE} ORDER BY key LIMIT ?",
        (prefix, upper, now, limit),
    )
    return tuple(_row(row) for row in rows)


def delete(conn: Conn, now: float, key: str, expected_version: int | None) -> Variable:
    """Delete the live value (a ``VersionConflict`` if ``expected_version`` is stale); returns what it was."""
    current = get(conn, now, key)
    if expected_version is not None:
        check_int(expected_version, "expected_version", low=0, high=MAX_VERSION)
        if expected_version != current.version:
            raise _conflict(key, expected_version, current.version)
    # The row stays as an expired tombstone, so the version keeps counting: an
    # expected_version read before the delete never matches a later value.
    conn.execute("UPDATE variables SET expires_at = ?, updated_at = ? WHERE key = ?", (now, now, key))
    return current
