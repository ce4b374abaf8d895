"""The freshness report: how far a backend's copies are from the canonical files.

By default it reads only local state (the index's hashes and the sync
mapping), so it costs no remote call and stays well under a second for a
thousand memories::

    in_sync   the mapping's hash is the file's hash (and no upsert is pending)
    stale     mapped, but the file changed since (or an upsert never finished)
    missing   a memory with no copy on the backend
    orphaned  a mapping whose memory no longer exists (sync marks it obsolete)

With ``check_remote`` it also fetches every mapped remote id (one ``get``
per id: slower, and only when the backend is up) and counts a mapped memory
whose remote copy is gone or obsolete as ``missing``, its ids listed as
orphaned remote ids.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from memrouter.backends.base import Backend
from memrouter.errors import NotFound
from memrouter.sync.state import load_records

__all__ = ["validate"]


def validate(
    conn: sqlite3.Connection,
    backend_name: str,
    current: Mapping[str, str],
    *,
    remote: Backend | None = None,
) -> dict[str, Any]:
    """The report for ``backend_name`` over ``current`` (every memory name -> content hash)."""
    started = time.perf_counter()
    records = load_records(conn, backend_name)
    details: list[dict[str, Any]] = []
    counts = {"in_sync": 0, "stale": 0, "missing": 0, "orphaned": 0}
    gone_remote: list[str] = []
    for name in sorted(current):
        record = records.get(name)
        if record is None or not record.remote_ids:
            state, why = "missing", "never synced" if record is None else "upsert never finished"
        elif record.pending is not None or record.hash != current[name]:
            state, why = "stale", "changed since the last sync" if record.pending is None else "upsert never finished"
        else:
            state, why = "in_sync", ""
        if remote is not None and state != "missing" and record is not None:
            absent = [rid for rid in record.remote_ids if not _exists(remote, rid)]
            if absent:
                gone_remote += absent
                state, why = "missing", f"remote id(s) {', '.join(absent)} gone or obsolete"
        counts[state] += 1
        if state != "in_sync":
            entry: dict[str, Any] = {"name": name, "state": state, "reason": why}
            if record is not None:
                entry["remote_ids"] = list(record.remote_ids)
            details.append(entry)
    for name in sorted(set(records) - set(current)):
        counts["orphaned"] += 1
        details.append(
            {"name": name, "state": "orphaned", "reason": "memory no longer exists",
             "remote_ids": list(records[name].remote_ids)}
        )  # fmt: skip
    report: dict[str, Any] = {
        "backend": backend_name,
        "total": len(current),
        **counts,
        "checked_remote": remote is not None,
        "duration_ms": 0.0,
        "details": details,
    }
    if remote is not None:
        report["orphaned_remote_ids"] = gone_remote
    report["duration_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return report


def _exists(backend: Backend, remote_id: str) -> bool:
    try:
        return not backend.get(remote_id).is_obsolete
    except NotFound:
        return False
