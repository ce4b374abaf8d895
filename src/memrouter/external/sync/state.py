"""Sync state in the index database: which remote memories hold which canonical memory.

The tables are created by the index migration ``0100_sync_state``
(``memrouter.index.sqlite.db``). One row per (backend, name) in ``sync_state``: the remote ids (several when
the memory was split into parts), the content hash last sent, when, and a
``pending`` marker. Every remote id also has a row in ``sync_remote`` so the
router can tell in one indexed lookup that an external hit *is* a canonical
memory (its synced copy, or one of its parts).

Crash safety: before any remote call that may create memories, sync writes
the ``pending`` marker (the hash it is about to send) in its own committed
transaction; the remote ids are recorded, and the marker cleared, in one
transaction after the calls succeed. A row found with a marker on the next
run means the process died in between: the remote memories it may have
created are looked up by their content before anything is created again
(see ``memrouter.external.sync.engine``), so re-running converges with no duplicates.

The state is derived data like the rest of the index; losing the index file
loses the mapping (the next sync then looks for the remote copies before
creating any: ``memrouter.external.sync.engine``).

A project with a shared PostgreSQL index (``[index] url``) keeps its mapping
there instead (``memrouter.external.sync.pgstate``), so every machine that syncs
the repository sees the copies the others made. ``SyncState`` is what both
stores answer; ``LocalSyncState`` is the index database's.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

from memrouter.index.sqlite.connection import transaction

__all__ = [
    "LocalSyncState",
    "SyncRecord",
    "SyncState",
    "delete_record",
    "load_records",
    "mapped_remote_ids",
    "move_record",
    "set_pending",
    "transaction",
    "write_record",
]


@dataclass(frozen=True, slots=True)
class SyncRecord:
    """What one backend holds for one canonical memory.

    ``hash`` is the content hash last synced (``""`` before the first
    success); ``pending`` is the hash of an upsert that started and never
    finished (a crash), else ``None``.
    """

    backend: str
    name: str
    hash: str
    remote_ids: tuple[str, ...]
    synced_at: float | None
    pending: str | None = None


def _record(row: sqlite3.Row | tuple[object, ...]) -> SyncRecord:
    backend, name, hash_, remote_ids, synced_at, pending = tuple(row)
    return SyncRecord(
        backend=str(backend),
        name=str(name),
        hash=str(hash_),
        remote_ids=tuple(str(i) for i in json.loads(str(remote_ids))),
        synced_at=None if synced_at is None else float(str(synced_at)),
        pending=None if pending is None else str(pending),
    )


def load_records(conn: sqlite3.Connection, backend: str) -> dict[str, SyncRecord]:
    """Every record of ``backend``, by name."""
    rows = conn.execute(
        "SELECT backend, name, hash, remote_ids, synced_at, pending FROM sync_state WHERE backend = ?",
        (backend,),
    )
    return {record.name: record for record in map(_record, rows)}


def load_record(conn: sqlite3.Connection, backend: str, name: str) -> SyncRecord | None:
    """The record of ``name`` on ``backend``, or None when it was never synced there."""
    row = conn.execute(
        "SELECT backend, name, hash, remote_ids, synced_at, pending FROM sync_state WHERE backend = ? AND name = ?",
        (backend, name),
    ).fetchone()
    return None if row is None else _record(row)


def mapped_remote_ids(conn: sqlite3.Connection, backend: str, remote_ids: Iterable[str]) -> dict[str, str]:
    """Of ``remote_ids``, those sync created for a canonical memory: remote id -> name."""
    ids = list(dict.fromkeys(remote_ids))
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT remote_id, name FROM sync_remote WHERE backend = ? AND remote_id IN ({marks})",
        (backend, *ids),
    )
    return {str(row[0]): str(row[1]) for row in rows}


def set_pending(conn: sqlite3.Connection, backend: str, name: str, hash_: str) -> None:
    """Mark an upsert of ``name`` (content ``hash_``) as started, in its own transaction."""
    with transaction(conn):
        conn.execute(
            "INSERT INTO sync_state (backend, name, pending) VALUES (?, ?, ?) "
            "ON CONFLICT(backend, name) DO UPDATE SET pending = excluded.pending",
            (backend, name, hash_),
        )


def write_record(
    conn: sqlite3.Connection, backend: str, name: str, hash_: str, remote_ids: Iterable[str]
) -> SyncRecord:
    """Record a finished upsert (clearing the pending marker), in one transaction."""
    ids = [str(i) for i in remote_ids]
    now = time.time()
    with transaction(conn):
        conn.execute(
            "INSERT INTO sync_state (backend, name, hash, remote_ids, synced_at, pending) "
            "VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT(backend, name) DO UPDATE SET hash = excluded.hash, "
            "remote_ids = excluded.remote_ids, synced_at = excluded.synced_at, pending = NULL",
            (backend, name, hash_, json.dumps(ids), now),
        )
        conn.execute("DELETE FROM sync_remote WHERE backend = ? AND name = ?", (backend, name))
        conn.executemany(
            "INSERT OR REPLACE INTO sync_remote (backend, remote_id, name, part) VALUES (?, ?, ?, ?)",
            [(backend, remote_id, name, part) for part, remote_id in enumerate(ids)],
        )
    return SyncRecord(backend, name, hash_, tuple(ids), now)


def delete_record(conn: sqlite3.Connection, backend: str, name: str) -> None:
    """Forget ``name`` for ``backend`` (after its remote copies were marked obsolete)."""
    with transaction(conn):
        conn.execute("DELETE FROM sync_state WHERE backend = ? AND name = ?", (backend, name))
        conn.execute("DELETE FROM sync_remote WHERE backend = ? AND name = ?", (backend, name))


def move_record(conn: sqlite3.Connection, backend: str, old: str, new: str) -> bool:
    """Move the mapping of ``old`` to ``new`` (a rename), forcing the next sync to update it.

    The hash is cleared so the remote copies get the new title and context.
    Returns whether anything moved (nothing does when ``new`` already has a
    mapping of its own or ``old`` has none).
    """
    with transaction(conn):
        taken = conn.execute("SELECT 1 FROM sync_state WHERE backend = ? AND name = ?", (backend, new)).fetchone()
        if taken is not None:
            return False
        moved = conn.execute(
            "UPDATE sync_state SET name = ?, hash = '' WHERE backend = ? AND name = ?", (new, backend, old)
        ).rowcount
        conn.execute("UPDATE sync_remote SET name = ? WHERE backend = ? AND name = ?", (new, backend, old))
    return bool(moved)


class SyncState(Protocol):
    """Where a project's sync mapping is kept: the local index (``LocalSyncState``) or PostgreSQL."""

    location: str

    def records(self, backend: str) -> dict[str, SyncRecord]: ...
    def record(self, backend: str, name: str) -> SyncRecord | None: ...
    def mapped(self, backend: str, remote_ids: Iterable[str]) -> dict[str, str]: ...
    def set_pending(self, backend: str, name: str, hash_: str) -> None: ...
    def write(self, backend: str, name: str, hash_: str, remote_ids: Iterable[str]) -> SyncRecord: ...
    def delete(self, backend: str, name: str) -> None: ...
    def move(self, backend: str, old: str, new: str) -> bool: ...
    def synced_count(self, backend: str) -> int: ...
    def exclusive(self, backend: str) -> AbstractContextManager[None]:
        """Held for one sync run to ``backend``: runs of one project wait for each other."""
        ...


class LocalSyncState:
    """The sync mapping in the local index database (the functions above, bound to ``conn``)."""

    location = "the local index"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def records(self, backend: str) -> dict[str, SyncRecord]:
        return load_records(self.conn, backend)

    def record(self, backend: str, name: str) -> SyncRecord | None:
        return load_record(self.conn, backend, name)

    def mapped(self, backend: str, remote_ids: Iterable[str]) -> dict[str, str]:
        return mapped_remote_ids(self.conn, backend, remote_ids)

    def set_pending(self, backend: str, name: str, hash_: str) -> None:
        set_pending(self.conn, backend, name, hash_)

    def write(self, backend: str, name: str, hash_: str, remote_ids: Iterable[str]) -> SyncRecord:
        return write_record(self.conn, backend, name, hash_, remote_ids)

    def delete(self, backend: str, name: str) -> None:
        delete_record(self.conn, backend, name)

    def move(self, backend: str, old: str, new: str) -> bool:
        return move_record(self.conn, backend, old, new)

    def synced_count(self, backend: str) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM sync_state WHERE backend = ? AND remote_ids != '[]'", (backend,)
        ).fetchone()
        return int(row[0])

    @contextmanager
    def exclusive(self, backend: str) -> Iterator[None]:
        yield  # one index connection: the router's lock already orders its runs
