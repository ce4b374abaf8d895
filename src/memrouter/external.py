"""The router's side of the external memory services: asking them, merging, syncing, reporting.

``ExternalServices`` holds the configured backends (built and connected only
when first used) and does for the Router what needs both them and the
index: one backend's results, the canonical-first merge, sync and the
freshness report. The rules live in ``memrouter.merge`` and ``memrouter.sync``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from memrouter.config import Config
from memrouter.errors import BackendError, BackendUnavailable
from memrouter.model import Hit

__all__ = ["ExternalServices", "project_defaults"]

T = TypeVar("T")


def project_defaults(config: Config) -> dict[str, dict[str, Any]]:
    """The ``[backends]`` sections, a Graphiti one without ``group`` given the project folder's name.

    One Graphiti group per project: two projects on one server never share a graph by default.
    """
    from memrouter.backends.configured import backend_settings

    sections = {name: dict(section) for name, section in config.backends.items()}
    for name, section in sections.items():
        if backend_settings(name, section)[0] == "graphiti" and "group" not in section and config.project_dir:
            section["group"] = re.sub(r"[^A-Za-z0-9_-]+", "-", config.project_dir.name).strip("-") or "memrouter"
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
        from memrouter.backends.configured import ConfiguredBackends

        self.config = config
        self._conn = conn
        self._indexed = indexed
        self._lock = lock
        self.configured = ConfiguredBackends(project_defaults(config))

    def close(self) -> None:
        self.configured.close()

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
        """Canonical ``hits`` plus what the healthy backends add (``memrouter.merge``)."""
        from memrouter.merge import merge_hits
        from memrouter.sync.state import mapped_remote_ids

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
            lambda: {
                name: mapped_remote_ids(self._conn(), name, [rid for hit in found for rid in hit.mapped_ids])
                for name, found in external.items()
            }
        )
        return merge_hits(hits, external, limit, synced, content=content)

    def status(self) -> list[dict[str, Any]]:
        """Each backend: name, availability, endpoint, health-cache age, last error, sync count."""
        from memrouter.index import queries

        return self.configured.status(
            lambda backend: self._indexed(lambda: queries.synced_count(self._conn(), backend))
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
        from memrouter.sync.run import run_sync

        return run_sync(
            self.configured.for_sync(backend), self._conn(), self.config, read, current_hashes, self._lock,
            changes=changes, dry_run=dry_run, force=force,
        )  # fmt: skip

    def sync_states(self, name: str, content_hash: str) -> list[tuple[str, str, str]]:
        """(backend, state, why) of one memory on each backend that syncs, from the local sync records."""
        from memrouter.sync.validate import memory_state

        backends = [target.name for target in self.configured.flagged("sync").values()]

        def read() -> list[tuple[str, str, str]]:
            return [(backend, *memory_state(self._conn(), backend, name, content_hash)) for backend in backends]

        with self._lock:
            states: list[tuple[str, str, str]] = self._indexed(read)
        return states

    def validate(self, current: dict[str, str], *, backend: str | None, check_remote: bool) -> list[Any]:
        from memrouter.sync.run import run_validate

        targets = self.configured.for_sync(backend)
        return run_validate(targets, self._conn(), current, self._lock, check_remote=check_remote)
