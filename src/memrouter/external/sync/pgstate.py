"""The sync mapping in PostgreSQL: which remote memories hold which canonical memory, per project.

With ``[index] url`` every machine that syncs a repository to an external
service reads and writes one mapping (tables ``sync_state`` and
``sync_remote``, keyed by the project), so a memory one machine created
remotely is updated in place by the next machine's sync, never created twice.
The rows and the crash protocol are those of the local index's mapping
(``memrouter.external.sync.state``). A sync run holds the project's sync lock for its
backend (``exclusive``), so two machines' runs take turns instead of racing
to create the same memory. A project's first run on the database takes the
mapping its machine kept locally (``adopt``), so moving to PostgreSQL
recreates nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from memrouter.config.settings import redacted_url
from memrouter.external.sync.state import LocalSyncState, SyncRecord
from memrouter.index.postgres.connect import Database

__all__ = ["PgSyncState"]

_COLUMNS = "backend, name, hash, remote_ids, synced_at, pending"


def _record(row: tuple[Any, ...]) -> SyncRecord:
    backend, name, hash_, remote_ids, synced_at, pending = row
    return SyncRecord(str(backend), str(name), str(hash_), tuple(remote_ids), synced_at, pending)


class PgSyncState:
    """One project's sync mapping in PostgreSQL (``memrouter.external.sync.state.SyncState``)."""

    def __init__(self, database: Database, project: str) -> None:
        self.database = database
        self.project = project
        self.location = f"{redacted_url(database.url)} (project {project})"

    def records(self, backend: str) -> dict[str, SyncRecord]:
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sync_state WHERE project = %s AND backend = %s", (self.project, backend)
            ).fetchall()
        return {record.name: record for record in map(_record, rows)}

    def record(self, backend: str, name: str) -> SyncRecord | None:
        with self.database.connection() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sync_state WHERE project = %s AND backend = %s AND name = %s",
                (self.project, backend, name),
            ).fetchone()
        return None if row is None else _record(row)

    def mapped(self, backend: str, remote_ids: Iterable[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(remote_ids))
        if not ids:
            return {}
        with self.database.connection() as conn:
            rows = conn.execute(
                "SELECT remote_id, name FROM sync_remote WHERE project = %s AND backend = %s AND remote_id = ANY(%s)",
                (self.project, backend, ids),
            ).fetchall()
        return {str(remote_id): str(name) for remote_id, name in rows}

    def set_pending(self, backend: str, name: str, hash_: str) -> None:
        with self.database.connection() as conn, conn.transaction():
            self._project_row(conn)
            conn.execute(
                "INSERT INTO sync_state (project, backend, name, pending) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (project, backend, name) DO UPDATE SET pending = excluded.pending",
                (self.project, backend, name, hash_),
            )

    def write(self, backend: str, name: str, hash_: str, remote_ids: Iterable[str]) -> SyncRecord:
        ids = [str(i) for i in remote_ids]
        now = time.time()
        with self.database.connection() as conn, conn.transaction():
            self._project_row(conn)
            self._write(conn, SyncRecord(backend, name, hash_, tuple(ids), now))
        return SyncRecord(backend, name, hash_, tuple(ids), now)

    def _write(self, conn: Any, record: SyncRecord) -> None:
        conn.execute(
            "INSERT INTO sync_state (project, backend, name, hash, remote_ids, synced_at, pending) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project, backend, name) DO UPDATE SET "
            "hash = excluded.hash, remote_ids = excluded.remote_ids, synced_at = excluded.synced_at, "
            "pending = excluded.pending",
            (self.project, record.backend, record.name, record.hash, list(record.remote_ids), record.synced_at,
             record.pending),
        )  # fmt: skip
        conn.execute(
            "DELETE FROM sync_remote WHERE project = %s AND backend = %s AND name = %s",
            (self.project, record.backend, record.name),
        )
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO sync_remote (project, backend, remote_id, name, part) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (project, backend, remote_id) DO UPDATE SET name = excluded.name, part = excluded.part",
                [(self.project, record.backend, rid, record.name, part) for part, rid in enumerate(record.remote_ids)],
            )

    def delete(self, backend: str, name: str) -> None:
        with self.database.connection() as conn, conn.transaction():
            for table in ("sync_state", "sync_remote"):
                conn.execute(
                    f"DELETE FROM {table} WHERE project = %s AND backend = %s AND name = %s".encode(),
                    (self.project, backend, name),
                )

    def move(self, backend: str, old: str, new: str) -> bool:
        with self.database.connection() as conn, conn.transaction():
            taken = conn.execute(
                "SELECT 1 FROM sync_state WHERE project = %s AND backend = %s AND name = %s FOR UPDATE",
                (self.project, backend, new),
            ).fetchone()
            if taken is not None:
                return False
            moved = conn.execute(
                "UPDATE sync_state SET name = %s, hash = '' WHERE project = %s AND backend = %s AND name = %s",
                (new, self.project, backend, old),
            ).rowcount
            conn.execute(
                "UPDATE sync_remote SET name = %s WHERE project = %s AND backend = %s AND name = %s",
                (new, self.project, backend, old),
            )
        return bool(moved)

    def synced_count(self, backend: str) -> int:
        with self.database.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM sync_state WHERE project = %s AND backend = %s AND cardinality(remote_ids) > 0",
                (self.project, backend),
            ).fetchone()
        return int(row[0]) if row else 0

    @contextmanager
    def exclusive(self, backend: str) -> Iterator[None]:
        """The project's sync lock for ``backend``, held on one pooled connection for the whole run."""
        key = f"memrouter-sync:{self.project}:{backend}"
        with self.database.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def adopt(self, local: LocalSyncState, backend: str) -> int:
        """Take ``local``'s mapping for ``backend`` when the database has none for this project; how many rows."""
        records = local.records(backend)
        if not records:
            return 0
        with self.database.connection() as conn, conn.transaction():
            self._project_row(conn)
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memrouter-sync-adopt:{self.project}",))
            if conn.execute(
                "SELECT 1 FROM sync_state WHERE project = %s AND backend = %s LIMIT 1", (self.project, backend)
            ).fetchone():
                return 0
            for record in records.values():
                self._write(conn, record)
        return len(records)

    def _project_row(self, conn: Any) -> None:
        conn.execute("INSERT INTO projects (project) VALUES (%s) ON CONFLICT (project) DO NOTHING", (self.project,))
