"""The freshness report: how far a backend's copies are from the canonical files.

By default it reads only local state (the index's hashes and the sync
mapping), so it costs no remote call and stays well under a second for a
thousand memories::

    in_sync   the mapping's hash is the file's hash (and no upsert is pending)
    stale     mapped, but the file changed since (or an upsert never finished)
    missing   a memory with no copy on the backend
    orphaned  a mapping whose memory no longer exists (sync marks it obsolete)

With ``check_remote`` it also checks every mapped remote id, and counts a
mapped memory whose remote copy is gone or obsolete as ``missing``, its ids
listed as orphaned remote ids. It asks the backend as cheaply as the backend
allows: one call in all when it ``SupportsInventory``; a page of ids per call
when it ``SupportsListing`` (Forgetful: 100), each id the listing does not show
then fetched; else one ``get`` per id. Only when the backend is up.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memrouter.core.errors import BackendError, BackendUnavailable, NotFound
from memrouter.core.lazylog import LazyLogger
from memrouter.external.backends.base import Backend, SupportsInventory, SupportsListing
from memrouter.external.sync.state import SyncRecord, SyncState

__all__ = ["FreshnessEntry", "FreshnessReport", "memory_state", "validate", "state_of"]

log = LazyLogger(__name__)


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
    listed = _listed(remote, records, current) if held is None and remote is not None else None
    for name in sorted(current):
        record = records.get(name)
        state, why = state_of(record, current[name])
        if remote is not None and state != "missing" and record is not None:
            absent = [rid for rid in record.remote_ids if not _exists(remote, rid, held, listed)]
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


def _listed(remote: Backend, records: Mapping[str, SyncRecord], current: Mapping[str, str]) -> set[str] | None:
    """The ids ``remote`` lists as live, when it ``SupportsListing`` in fewer calls than fetching each copy."""
    if not isinstance(remote, SupportsListing):
        return None
    wanted = sum(len(records[name].remote_ids) for name in current if name in records)
    if wanted == 0:
        return None
    try:
        return remote.live_ids(most_calls=wanted)
    except BackendUnavailable:
        raise
    except BackendError as exc:  # the listing failed, the service answers: fetch each copy instead
        log.warning("%s: cannot list what it holds (%s); checking each copy", remote.name, exc)
        return None


def _exists(backend: Backend, remote_id: str, held: Mapping[str, str] | None, listed: set[str] | None) -> bool:
    if held is not None:
        return remote_id in held
    if listed is not None and remote_id in listed:
        return True  # listed as live just now; an id the listing does not show is fetched (it may have raced)
    try:
        return not backend.get(remote_id).is_obsolete
    except NotFound:
        return False
