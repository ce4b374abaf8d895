"""The Router's calls on external memory services: the backends, their status, sync and validate.

Mixed into ``Router``; the work is ``memrouter.external.services``'s (built on first
use, so a router that never asks a service never loads it).
"""

from __future__ import annotations

import builtins

from memrouter.index.sqlite import queries

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memrouter.config.settings import Config
    from memrouter.external.services import ExternalServices
    from memrouter.external.sync.validate import FreshnessReport
    from memrouter.index.activity import ActivityTimes
    from memrouter.index.sqlite.keeper import IndexKeeper
    from memrouter.store.files import MemoryStore

__all__ = ["ExternalQueries"]


class ExternalQueries:
    """Mixed into ``Router``: its external services (``memrouter.external.services``)."""

    config: Config
    store: MemoryStore
    _index: IndexKeeper
    _lock: Any
    _services: ExternalServices | None
    refresh: Callable[..., Any]
    _activity_times: Callable[[], ActivityTimes]

    @property
    def _external(self) -> ExternalServices:
        """The configured external services (none is built or connected until used)."""
        with self._lock:  # one set per router, however many threads ask first
            if self._services is None:
                from memrouter.external.services import ExternalServices

                self._services = ExternalServices(
                    self.config, lambda: self._index.conn, self._index.indexed, self._lock
                )
            return self._services

    def backends(self) -> dict[str, Any]:
        """The configured external backends that could be built, by name (built on first call).

        A backend that cannot be built (not installed, bad settings) is left
        out and its error shown by ``status``; nothing connects here.
        """
        return self._external.configured.built()

    def backend(self, name: str) -> Any:
        """The backend ``name``; ``ConfigError`` (or the reason it could not be built) otherwise."""
        return self._external.configured.get(name)

    def backend_status(self) -> builtins.list[dict[str, Any]]:
        """Each configured backend: name, availability, endpoint, health-cache age, last error, sync count."""
        return self._external.status() if self.config.backends else []

    def _current_hashes(self) -> dict[str, str]:
        """Every memory name and content hash, after an incremental refresh (sync must see every change)."""
        with self._lock:
            self.refresh()
            return self._index.indexed(lambda: queries.current_hashes(self._index.conn))

    def sync(
        self,
        *,
        backend: str | None = None,
        changes: str = "all",
        dry_run: bool = False,
        force: bool = False,
    ) -> builtins.list[Any]:
        """Sync the canonical memories one way to the backends; one ``SyncReport`` per backend.

        ``changes`` is ``"all"`` (every memory and mapping), ``"staged"`` (what
        ``git diff --cached`` shows under the memories root) or ``"queue"``
        (the entries the pre-commit hook queued; removed once synced to every
        backend). See ``memrouter.external.sync.engine`` for the rules.
        """
        return self._index.translated(
            lambda: self._external.sync(
                self._recorded, self._current_hashes, backend=backend, changes=changes, dry_run=dry_run, force=force
            )
        )

    def _recorded(self, name: str) -> Any:
        """The memory as sync sends it: a ``created`` its front matter leaves out comes from git (its record time)."""
        memory = self.store.read(name)
        if memory.created is not None:
            return memory
        return self._index.indexed(lambda: self._activity_times().dated(memory, self._index.conn))

    def sync_states(self, name: str, content_hash: str) -> builtins.list[tuple[str, str, str]]:
        """(backend, state, why) of one memory, whose text has ``content_hash``, on each backend that syncs.

        The rule of ``validate`` (``in_sync``, ``stale``, ``missing``) for one memory: one row read per
        backend, no refresh of the whole index, no remote call.
        """
        return self._external.sync_states(name, content_hash) if self.config.backends else []

    def validate(self, *, backend: str | None = None, check_remote: bool = False) -> builtins.list[FreshnessReport]:
        """The freshness report per backend (``memrouter.external.sync.validate``): local state only unless ``check_remote``."""
        current = self._current_hashes()
        return self._index.indexed(lambda: self._external.validate(current, backend=backend, check_remote=check_remote))
