"""The freshness report: how far a backend's copies are from the canonical files.

By default it reads only local state (the index's hashes and the sync
mapping), so it costs no remote call and stays well under a second for a
thousand memories::

    in_sync   the mapping's hash is the file's hash (and no upsert is pending)
    stale     mapped, but the file changed since (or an upsert never finished)
    missing   a memory with no copy on the backend
    orphaned  a mapping whose memory no longer exists (sync marks it obsolete)

With ``check_remote`` it also fetches every mapped remote id (one ``get``
per id: slower, and only when the backend is up; one call in all for a backend
that ``SupportsInventory``) and counts a mapped memory whose remote copy is gone
or obsolete as ``missing``, its ids listed as orphaned remote ids.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memrouter.core.errors import NotFound
from memrouter.external.backends.base import Backend, SupportsInventory
from memrouter.external.sync.state import SyncRecord, SyncState

__all__ = ["FreshnessEntry", "FreshnessReport", "memory_state", "validate", "state_of"]


@dataclass(frozen=True, slots=True)
class FreshnessEntry:
    """One memory that is not in sync: its state, why, and its remote ids."""

    name: str
    state: str
    reason: str
    remote_ids: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "state": self.state, "reason": self.reason}
        if self.remote_ids is not None:
            data["remote_ids"] = list(self.remote_ids)
        return data


@dataclass(frozen=True, slots=True)
class FreshnessReport:
    """How fresh one backend's copies are (see the module docstring for the states)."""

    backend: str
    total: int
    in_sync: int
    stale: int
    missing: int
    orphaned: int
    checked_remote: bool
    duration_ms: float
    details: tuple[FreshnessEntry, ...]
    orphaned_remote_ids: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``memrouter validate --format json``."""
        data: dict[str, Any] = {
            "backend": self.backend,
            "total": self.total,
            "in_sync": self.in_sync,
            "stale": self.stale,
            "missing": self.missing,
            "orphaned": self.orphaned,
            "checked_remote": self.checked_remote,
            "duration_ms": self.duration_ms,
            "details": [entry.to_dict() for entry in self.details],
        }
        if self.orphaned_remote_ids is not None:
            data["orphaned_remote_ids"] = list(self.orphaned_remote_ids)
        return data


def validate(
    mapping: SyncState,
    backend_name: str,
    current: Mapping[str, str],
    *,
    remote: Backend | None = None,
) -> FreshnessReport:
    """The report for ``backend_name`` over ``current`` (every memory name -> content hash)."""
    started = time.perf_counter()
    records = mapping.records(backend_name)
    details: list[FreshnessEntry] = []
    counts = {"in_sync": 0, "stale": 0, "missing": 0, "orphaned": 0}
    gone_remote: list[str] = []
    held = remote.inventory() if isinstance(remote, SupportsInventory) else None
    for name in sorted(current):
        record = records.get(name)
        state, why = state_of(record, current[name])
        if remote is not None and state != "missing" and record is not None:
            absent = [rid for rid in record.remote_ids if not _exists(remote, rid, held)]
            if absent:
                gone_remote += absent
                state, why = "missing", f"remote id(s) {', '.join(absent)} gone or obsolete"
        counts[state] += 1
        if state != "in_sync":
            ids = tuple(record.remote_ids) if record is not None else None
            details.append(FreshnessEntry(name, state, why, ids))
    for name in sorted(set(records) - set(current)):
        counts["orphaned"] += 1
        details.append(FreshnessEntry(name, "orphaned", "memory no longer exists", tuple(records[name].remote_ids)))
    return FreshnessReport(
        backend=backend_name,
        total=len(current),
        **counts,
        checked_remote=remote is not None,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
        details=tuple(details),
        orphaned_remote_ids=tuple(gone_remote) if remote is not None else None,
    )


def state_of(record: SyncRecord | None, content_hash: str) -> tuple[str, str]:
    """(state, why) of a memory whose text has ``content_hash``, from its sync ``record`` (local state only)."""
    if record is None or not record.remote_ids:
        return "missing", "never synced" if record is None else "upsert never finished"
    if record.pending is not None or record.hash != content_hash:
        return "stale", "changed since the last sync" if record.pending is None else "upsert never finished"
    return "in_sync", ""


def memory_state(mapping: SyncState, backend_name: str, name: str, content_hash: str) -> tuple[str, str]:
    """(state, why) of one memory on ``backend_name``: one row read, the rule ``validate`` applies to all."""
    return state_of(mapping.record(backend_name, name), content_hash)


def _exists(backend: Backend, remote_id: str, held: Mapping[str, str] | None) -> bool:
    if held is not None:
        return remote_id in held
    try:
        return not backend.get(remote_id).is_obsolete
    except NotFound:
        return False
