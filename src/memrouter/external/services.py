"""The router's side of the external memory services: asking them, merging, syncing, reporting.

``ExternalServices`` holds the configured backends (built and connected only
when first used) and does for the Router what needs both them and the
index: one backend's results, the canonical-first merge, sync and the
freshness report. The rules live in ``memrouter.external.merge`` and ``memrouter.external.sync``.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from memrouter.config.settings import Config
from memrouter.core.errors import BackendError, BackendUnavailable
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import Hit
from memrouter.external.backends.configured import ConfiguredBackends, backend_settings
from memrouter.external.backends.pixeltable import table_for
from memrouter.external.merge import merge_hits
from memrouter.external.sync.pgstate import PgSyncState
from memrouter.external.sync.run import run_sync, run_validate
from memrouter.external.sync.state import LocalSyncState
from memrouter.external.sync.validate import memory_state
from memrouter.index.postgres.connect import Database

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.external.sync.pgstate import PgSyncState
    from memrouter.external.sync.state import SyncState

__all__ = ["ExternalServices", "project_defaults"]

log = LazyLogger(__name__)
T = TypeVar("T")
# After the database holding the sync mapping failed, reads use the local mapping this long before trying again.
MAPPING_RETRY_AFTER = 30.0


def project_defaults(config: Config) -> dict[str, dict[str, Any]]:
    """The ``[backends]`` sections, with what each service keeps per project filled from the project folder.

    A Graphiti section without ``group`` gets the project folder's name, a Pixeltable one without ``table``
    gets ``memrouter.<folder>`` (and a relative ``home`` is taken from the project folder), a Hindsight one
    without ``bank`` gets the folder's name: two projects on one service never share their memories by default.
    """

    sections = {name: dict(section) for name, section in config.backends.items()}
    project = config.project_dir
    if project is None:
        return sections
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", project.name).strip("-") or "memrouter"
    for name, section in sections.items():
        kind = backend_settings(name, section)[0]
        if kind == "graphiti" and "group" not in section:
            section["group"] = slug
        elif kind == "pixeltable":
            section.setdefault("table", table_for(project.name))
            home = section.get("home")
            if isinstance(home, str) and home and not Path(home).expanduser().is_absolute():
                section["home"] = str(project / home)
        elif kind == "hindsight" and "bank" not in section:
            section["bank"] = slug
    return sections


class ExternalServices:
    """The configured backends of one router (see the module docstring).

    ``indexed`` runs a function against the index the way the Router does
    (repairing damage); ``conn`` gives the current index connection.
    """

    def __init__(
        self,
        config: Config,
        conn: Callable[[], sqlite3.Connection],
        indexed: Callable[[Callable[[], Any]], Any],
        lock: Any,
    ) -> None:

        self.config = config
        self._conn = conn
        self._indexed = indexed
        self._lock = lock
        self.configured = ConfiguredBackends(project_defaults(config))
        self._shared: PgSyncState | None = None
        self._retry_at = 0.0

    def close(self) -> None:
        self.configured.close()
        if self._shared is not None:
            self._shared.database.close()
            self._shared = None

    def mapping(self) -> SyncState:
        """Where this project's sync mapping lives: PostgreSQL with ``[index] url`` (shared by every machine
        that syncs the repository), else the local index. ``BackendUnavailable`` when the database is down."""

        url = self.config.index.url
        if not url:
            return LocalSyncState(self._conn())
        if self._shared is None:
            if time.monotonic() < self._retry_at:
                raise BackendUnavailable("PostgreSQL failed moments ago")

            try:
                self._shared = PgSyncState(Database(url, max_size=2), self.config.project_key)
            except BackendUnavailable:
                self._retry_at = time.monotonic() + MAPPING_RETRY_AFTER
                raise
        return self._shared

    def _reading(self, read: Callable[[SyncState], T]) -> T:
        """``read`` on the mapping; while a configured database is down, on the local index's (it may lag)."""

        try:
            return read(self.mapping())
        except BackendUnavailable as exc:
            log.warning("sync mapping in PostgreSQL unavailable, reading the local one: %s", exc)
            self._lost_database()
            return read(LocalSyncState(self._conn()))

    def _lost_database(self) -> None:
        """Drop the pool of a database that failed; the next ``mapping`` connects afresh after a wait."""
        if self._shared is not None:
            self._shared.database.close()
            self._shared, self._retry_at = None, time.monotonic() + MAPPING_RETRY_AFTER

    def search_one(self, name: str, query: str, limit: int, content: bool) -> list[Hit]:
        """Results from one backend only: the caller asked for it, so being down is an error."""
        backend = self.configured.get(name)
        if not backend.available():
            reason = backend.health.last_error or "unreachable"
            raise BackendUnavailable(f"{name} is unavailable at {backend.endpoint}: {reason}")
        try:
            found = backend.search(query, limit)
        except BackendError as exc:
            self.configured.note_error(backend, exc)
            raise
        return [hit.to_hit(content=content) for hit in found]

    def augment(self, query: str, limit: int, hits: list[Hit], content: bool) -> list[Hit]:
        """Canonical ``hits`` plus what the healthy backends add (``memrouter.external.merge``)."""

        if len(hits) >= limit:
            return hits
        external: dict[str, Any] = {}
        for name, backend in self.configured.flagged("search").items():
            if not backend.available():
                continue
            try:
                external[name] = backend.search(query, limit)
            except BackendError as exc:
                self.configured.note_error(backend, exc)
        if not external:
            return hits
        synced = self._indexed(
            lambda: self._reading(
                lambda mapping: {
                    name: mapping.mapped(name, [rid for hit in found for rid in hit.mapped_ids])
                    for name, found in external.items()
                }
            )
        )
        return merge_hits(hits, external, limit, synced, content=content)

    def status(self) -> list[dict[str, Any]]:
        """Each backend: name, availability, endpoint, health-cache age, last error, sync count."""
        return self.configured.status(
            lambda backend: self._indexed(lambda: self._reading(lambda mapping: mapping.synced_count(backend)))
        )

    def sync(
        self,
        read: Callable[[str], Any],
        current_hashes: Callable[[], dict[str, str]],
        *,
        backend: str | None,
        changes: str,
        dry_run: bool,
        force: bool,
    ) -> list[Any]:

        targets = self.configured.for_sync(backend)
        try:
            mapping = self.mapping()
            if self._shared is not None:  # the first run on the database takes this machine's mapping along
                for target in targets:
                    with self._lock:
                        adopted = self._shared.adopt(LocalSyncState(self._conn()), target.name)
                    if adopted:
                        log.info("%s: %d sync records copied to %s", target.name, adopted, self._shared.location)
        except BackendUnavailable as exc:  # writing a local mapping meanwhile would split it from the others'
            self._lost_database()
            raise BackendUnavailable(
                f"the sync mapping is in PostgreSQL, which cannot be reached: sync again once it is back ({exc})"
            ) from exc
        return run_sync(
            targets, mapping, self.config, read, current_hashes, self._lock,
            changes=changes, dry_run=dry_run, force=force,
        )  # fmt: skip

    def sync_states(self, name: str, content_hash: str) -> list[tuple[str, str, str]]:
        """(backend, state, why) of one memory on each backend that syncs, from the sync records."""

        backends = [target.name for target in self.configured.flagged("sync").values()]

        def read() -> list[tuple[str, str, str]]:
            return self._reading(
                lambda mapping: [(backend, *memory_state(mapping, backend, name, content_hash)) for backend in backends]
            )

        with self._lock:
            states: list[tuple[str, str, str]] = self._indexed(read)
        return states

    def validate(self, current: dict[str, str], *, backend: str | None, check_remote: bool) -> list[Any]:

        targets = self.configured.for_sync(backend)
        return self._reading(
            lambda mapping: run_validate(targets, mapping, current, self._lock, check_remote=check_remote)
        )
