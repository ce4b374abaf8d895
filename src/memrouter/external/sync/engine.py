"""One-way sync, canonical -> one external backend, by content hash.

For every memory asked about, ``Syncer.run`` reconciles the backend with the
file: a file with no mapping is created, one whose hash changed is updated
(``force`` re-sends unchanged ones too), an unchanged one is skipped, and a
mapping whose file is gone is marked obsolete on the backend with the reason
(a soft delete) and forgotten; so is a memory pending review, which is never
sent (``memrouter.ops.review``). Renames move the mapping before anything is
sent, so the remote copies are updated in place, never duplicated; ``--all``
also pairs a vanished name with an unmapped one of the same hash. Content
over the backend's ``max_content`` is split into linked parts
(``upsert_parts``), tracked together as one memory.

Each memory is its own unit of work (see ``memrouter.external.sync.state`` for the
crash protocol). The mapping lives in the index (or the shared PostgreSQL index), which may be
deleted and rebuilt at any time: when a run finds no sync state at all for a backend, it
looks for the first ``ADOPTION_PROBES`` memories on the backend (by content
and name, confirmed by the ``memrouter:<name>`` context) before creating
them; once one is found, every memory is looked for, and the copies found
are adopted (updated in place, listed in ``recovered``), never duplicated. A backend that
``SupportsInventory`` is asked once per run what it holds: a mapped memory whose
copy is not there (the service lost its data, or a write never landed) or holds
another hash is sent again, listed in ``restored``, so the mapping is never
trusted over the service. A run stops at the first ``BackendUnavailable`` (the service
went away; what was done so far is kept) and reports it in ``error``; other
per-memory failures (a reply that breaks the contract, content the service
refuses) are listed in ``failed`` and the run goes on, unless
``MAX_SAME_FAILURES`` memories in a row fail with the same error: then the
service is refusing everything and the run stops, saying so in ``error``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrouter.core.errors import BackendError, BackendUnavailable, InvalidInput, NotFound
from memrouter.core.model import PENDING, Memory
from memrouter.external.backends.base import Backend, MemoryDraft, SupportsInventory, upsert_parts
from memrouter.external.backends.split import split_content
from memrouter.external.sync import state

__all__ = ["CONTEXT_PREFIX", "Change", "SyncReport", "Syncer", "draft_for", "marker_for"]

log = logging.getLogger(__name__)

CONTEXT_PREFIX = "memrouter:"
RECOVERY_PROBE = 20  # results per search when looking for lost copies
# A run stops once this many memories in a row fail with the very same error.
MAX_SAME_FAILURES = 8
# With no sync state at all for a backend, the first memories to create are looked for there first.
ADOPTION_PROBES = 3


def marker_for(name: str) -> str:
    """The context every remote copy of ``name`` carries (how a lost mapping is found again)."""
    return f"{CONTEXT_PREFIX}{name}"


@dataclass(frozen=True, slots=True)
class Change:
    """One change to sync: ``upsert`` or ``delete`` of ``name``, or ``rename`` from ``old``.

    ``upsert`` and ``delete`` both reconcile with the file as it is now (a
    queued change to a file that was deleted since becomes a delete).
    """

    op: str
    name: str
    old: str | None = None
    reason: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Every memory name this change touches."""
        return (self.name,) if self.old is None else (self.old, self.name)


@dataclass
class SyncReport:
    """What one sync run did (or, with ``dry_run``, would do)."""

    backend: str
    dry_run: bool = False
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: int = 0
    obsoleted: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    error: str | None = None
    remote_calls: int = 0
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every memory asked about was synced."""
        return self.error is None and not self.failed

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "backend": self.backend,
            "dry_run": self.dry_run,
            "created": len(self.created),
            "updated": len(self.updated),
            "skipped": self.skipped,
            "obsoleted": len(self.obsoleted),
            "renamed": [list(pair) for pair in self.renamed],
            "recovered": self.recovered,
            "restored": self.restored,
            "failed": self.failed,
            "error": self.error,
            "duration_ms": round(self.duration_ms, 1),
            "details": {"created": self.created, "updated": self.updated, "obsoleted": self.obsoleted},
        }


def draft_for(memory: Memory, *, project_dir: Path | None = None, source_repo: str | None = None) -> MemoryDraft:
    """The backend draft for a canonical memory: its whole file text, title, tags and provenance."""
    path = Path(memory.path)
    source_file = str(path)
    if project_dir is not None:
        try:
            source_file = path.relative_to(project_dir).as_posix()
        except ValueError:
            pass  # the memory lives outside the project folder: no relative source path
    keywords = tuple(part for part in memory.name.replace("_", "-").split("/") if part)
    return MemoryDraft(
        title=memory.title or memory.name,
        content=memory.text,
        context=marker_for(memory.name),
        tags=memory.tags,
        keywords=keywords,
        source_repo=source_repo,
        source_files=(source_file,),
        source_url=memory.source if memory.source and "://" in memory.source else None,
        confidence=memory.confidence,
        recorded_at=memory.created,
    )


class Syncer:
    """Syncs canonical memories to one backend, keeping the mapping (``mapping``).

    ``read`` returns the memory named (``NotFound`` when there is no file);
    ``hashes`` gives every current name and content hash (for ``--all``);
    ``mapping`` keeps which remote memories hold which memory (``memrouter.external.sync.state``);
    ``lock`` guards the shared connection.
    """

    def __init__(
        self,
        backend: Backend,
        mapping: state.SyncState,
        read: Callable[[str], Memory],
        hashes: Callable[[], Mapping[str, str]],
        *,
        lock: threading.RLock | None = None,
        project_dir: Path | None = None,
        source_repo: str | None = None,
    ) -> None:
        self.backend = backend
        self.mapping = mapping
        self._read = read
        self._hashes = hashes
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        self.project_dir = project_dir
        self.source_repo = source_repo
        self._probes_left = 0  # memories still to look for before creating (no sync state)
        self._adopting = False  # copies were found: look for every memory before creating it
        self._inventory: dict[str, str] | None = None  # what the backend holds, when it can say

    # -- entry points ------------------------------------------------------
    def sync_all(self, *, dry_run: bool = False, force: bool = False) -> SyncReport:
        """Reconcile every memory and every mapping (renames found by hash)."""
        current = dict(self._hashes())
        with self._lock:
            records = self.mapping.records(self.backend.name)
        vanished = {name: rec for name, rec in records.items() if name not in current}
        by_hash: dict[str, list[str]] = {}
        for name, rec in vanished.items():
            if rec.hash and rec.remote_ids:
                by_hash.setdefault(rec.hash, []).append(name)
        renames: dict[str, str] = {}
        for name in sorted(current):
            olds = by_hash.get(current[name]) if name not in records else None
            if olds:
                renames[name] = olds.pop(0)
        changes = [Change("rename", new, old=old) for new, old in renames.items()]
        changes += [Change("upsert", name) for name in sorted(current) if name not in renames]
        paired = set(renames.values())
        changes += [Change("delete", name) for name in sorted(vanished) if name not in paired]
        return self.run(changes, dry_run=dry_run, force=force, current=current)

    def run(
        self,
        changes: Sequence[Change],
        *,
        dry_run: bool = False,
        force: bool = False,
        current: Mapping[str, str] | None = None,
    ) -> SyncReport:
        """Apply ``changes`` in order; see the module docstring.

        ``current`` (every name -> content hash, default from ``hashes``)
        lets an unchanged memory be skipped without reading its file.
        """
        started = time.perf_counter()
        report = SyncReport(self.backend.name, dry_run=dry_run)
        if not changes:
            report.duration_ms = (time.perf_counter() - started) * 1000
            return report
        if not dry_run and not self.backend.available(force=True):
            report.error = f"{self.backend.name} is unavailable: {self.backend.health.last_error or 'unreachable'}"
            report.duration_ms = (time.perf_counter() - started) * 1000
            return report
        hashes = dict(self._hashes()) if current is None else current
        with self._lock:
            records = self.mapping.records(self.backend.name)
        try:
            self._inventory = self._held(records, dry_run)
        except BackendUnavailable as exc:
            report.error = str(exc)
            report.duration_ms = (time.perf_counter() - started) * 1000
            return report
        self._probes_left = ADOPTION_PROBES if not records and not dry_run else 0
        self._adopting = False
        seen: set[str] = set()
        streak, last_failure = 0, ""
        for change in changes:
            if change.op == "rename" and change.old is not None:
                self._rename(change.old, change.name, records, report, dry_run)
            for name in change.names:
                if name in seen:
                    continue
                seen.add(name)
                try:
                    self._reconcile(
                        name, records, report, dry_run=dry_run, force=force, reason=change.reason,
                        known_hash=hashes.get(name),
                    )  # fmt: skip
                except BackendUnavailable as exc:
                    report.error = str(exc)
                    report.failed[name] = str(exc)
                    log.warning("sync to %s stopped: %s", self.backend.name, exc)
                    report.duration_ms = (time.perf_counter() - started) * 1000
                    return report
                except (BackendError, InvalidInput, NotFound) as exc:
                    report.failed[name] = str(exc)
                    log.warning("sync of %s to %s failed: %s", name, self.backend.name, exc)
                    streak = streak + 1 if str(exc) == last_failure else 1
                    last_failure = str(exc)
                    if streak >= MAX_SAME_FAILURES:
                        # The service rejects everything the same way (a wrong embedding
                        # dimension, say): going on would only repeat it for every memory.
                        report.error = (
                            f"stopped after {streak} memories in a row failed with the same error: {last_failure}"
                        )
                        report.duration_ms = (time.perf_counter() - started) * 1000
                        return report
                else:
                    report.done.add(name)
                    streak, last_failure = 0, ""
        report.duration_ms = (time.perf_counter() - started) * 1000
        return report

    def _held(self, records: Mapping[str, state.SyncRecord], dry_run: bool) -> dict[str, str] | None:
        """What the backend holds (remote id -> hash), when it ``SupportsInventory`` and anything is mapped."""
        backend = self.backend
        if not records or not isinstance(backend, SupportsInventory):
            return None
        if dry_run and not backend.available():
            return None  # a dry run works without the service: it then trusts the mapping
        try:
            return backend.inventory()
        except BackendUnavailable:
            raise
        except BackendError as exc:  # the listing failed, the service is there: trust the mapping this time
            log.warning("%s: cannot list what it holds (%s); trusting the sync mapping", backend.name, exc)
            return None

    def _lost(self, name: str, records: dict[str, state.SyncRecord]) -> bool:
        """Whether the backend lost (or holds another version of) ``name``'s copy; its mapping then keeps
        only the remote ids still there, with no hash, so the memory is sent again."""
        record = records.get(name)
        held = self._inventory
        if held is None or record is None or record.pending is not None or not record.remote_ids:
            return False
        present = tuple(rid for rid in record.remote_ids if rid in held)
        changed = len(present) == 1 == len(record.remote_ids) and held[present[0]] != record.hash
        if len(present) == len(record.remote_ids) and not changed:
            return False
        records[name] = state.SyncRecord(record.backend, name, "", present, record.synced_at)
        return True

    # -- one memory ---------------------------------------------------------
    def _rename(
        self, old: str, new: str, records: dict[str, state.SyncRecord], report: SyncReport, dry_run: bool
    ) -> None:
        if old not in records or new in records:
            return
        report.renamed.append((old, new))
        if dry_run:
            records[new] = records.pop(old)
            return
        with self._lock:
            moved = self.mapping.move(self.backend.name, old, new)
        if moved:
            record = records.pop(old)
            records[new] = state.SyncRecord(
                record.backend, new, "", record.remote_ids, record.synced_at, record.pending
            )

    def _reconcile(
        self,
        name: str,
        records: dict[str, state.SyncRecord],
        report: SyncReport,
        *,
        dry_run: bool,
        force: bool,
        reason: str | None,
        known_hash: str | None,
    ) -> None:
        lost = self._lost(name, records)
        record = records.get(name)
        if not force and record is not None and record.pending is None and record.hash == known_hash:
            report.skipped += 1  # the index says the file still has the synced hash: no need to read it
            return
        try:
            memory: Memory | None = self._read(name)
        except NotFound:
            memory = None
        if memory is not None and memory.status == PENDING:
            memory = None  # held for review: never sent, and a copy sent before it was held goes
            reason = reason or "pending review"
        if memory is None:
            if record is not None:
                self._obsolete(name, record, report, dry_run, reason)
                records.pop(name, None)
            return
        unchanged = record is not None and record.hash == memory.hash and record.pending is None
        if unchanged and not force:
            report.skipped += 1
            return
        creating = record is None or not record.remote_ids
        if not dry_run:
            records[name] = self._upsert(memory, record, report)
        (report.created if creating else report.updated).append(name)
        if lost:
            report.restored.append(name)

    def _upsert(self, memory: Memory, record: state.SyncRecord | None, report: SyncReport) -> state.SyncRecord:
        backend = self.backend
        draft = draft_for(memory, project_dir=self.project_dir, source_repo=self.source_repo)
        limit = backend.max_content
        parts = split_content(memory.text, limit) if limit is not None else [memory.text]
        existing = list(record.remote_ids) if record is not None else []
        if record is not None and record.pending is not None:
            found = self._recover(memory.name, parts, existing)
            if found:
                report.recovered.append(memory.name)
                existing += found
        elif record is None and (self._adopting or self._probes_left > 0):
            self._probes_left = max(0, self._probes_left - 1)
            try:
                found = self._recover(memory.name, parts, existing)
            except BackendUnavailable:
                raise
            except BackendError as exc:  # the search cannot tell: create, as without the probe
                log.warning("%s: cannot look for existing copies (%s); creating", self.backend.name, exc)
                self._probes_left, found = 0, []
            if found:
                self._adopting = True
                report.recovered.append(memory.name)
                existing = found
        if len(parts) > len(existing):
            with self._lock:  # remote memories are about to be created: say so first
                self.mapping.set_pending(backend.name, memory.name, memory.hash)
        ids = upsert_parts(backend, draft, parts, existing)
        report.remote_calls += len(parts) + max(0, len(existing) - len(parts))
        with self._lock:
            return self.mapping.write(backend.name, memory.name, memory.hash, ids)

    def _recover(self, name: str, parts: Sequence[str], known: Sequence[str]) -> list[str]:
        """Remote copies of ``name`` a crashed run created but never recorded, oldest first.

        They are found by searching for each part's content and for the name,
        then confirmed by their context marker (and source repository, so a
        same-named memory of another project is never taken); ids mapped to
        any memory are never taken.
        """
        marker = marker_for(name)
        candidates: list[str] = []
        queries = [*parts, f"{name.replace('/', ' ')} {marker}"]
        for query in queries:
            for hit in self.backend.search(query, RECOVERY_PROBE):
                if hit.context and not self._ours(hit.context, hit.source_repo, marker):
                    continue  # the search says whose it is: no need to fetch it
                if hit.remote_id not in candidates and hit.remote_id not in known:
                    candidates.append(hit.remote_id)
        with self._lock:
            mapped = self.mapping.mapped(self.backend.name, candidates)
        found = []
        for remote_id in candidates:
            if remote_id in mapped:
                continue
            remote = self.backend.get(remote_id)
            if self._ours(remote.context, remote.source_repo, marker) and not remote.is_obsolete:
                found.append(remote_id)
        found.sort(key=lambda rid: (0, int(rid), rid) if rid.isdigit() else (1, 0, rid))
        return found

    def _ours(self, context: str, source_repo: str | None, marker: str) -> bool:
        """Whether a remote memory is a copy of the memory ``marker`` names, from this project."""
        return context == marker and (self.source_repo is None or source_repo in (None, self.source_repo))

    def _obsolete(
        self, name: str, record: state.SyncRecord, report: SyncReport, dry_run: bool, reason: str | None
    ) -> None:
        report.obsoleted.append(name)
        if dry_run:
            return
        why = reason or f"memrouter: canonical memory {name!r} was deleted"
        remote_ids = list(record.remote_ids)
        if record.pending is not None:
            remote_ids += self._recover(name, [], remote_ids)
        for remote_id in remote_ids:
            try:
                self.backend.mark_obsolete(remote_id, why)
            except NotFound:
                pass  # already gone on the service: nothing left to obsolete
            report.remote_calls += 1
        with self._lock:
            self.mapping.delete(self.backend.name, name)
