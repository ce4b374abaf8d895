"""The external memory services as the use cases see them: the backends, their status, sync and validate.

The work is ``memrouter.external.services``'s, built on first use
(``Workspace.external``), so a workspace that never asks a service never
loads it.
"""

from __future__ import annotations

from memrouter.index.sqlite import queries

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.core.model import Memory
    from memrouter.external.sync.validate import FreshnessReport
    from memrouter.ops.workspace import Workspace

__all__ = ["backend", "backend_status", "backends", "sync", "sync_states", "validate"]


def backends(ws: Workspace) -> dict[str, Any]:
    """See ``Router.backends``: the configured backends that could be built, by name (nothing connects)."""
    return ws.external().configured.built()


def backend(ws: Workspace, name: str) -> Any:
    """See ``Router.backend``: the backend ``name``; ``ConfigError`` (or why it could not be built) otherwise."""
    return ws.external().configured.get(name)


def backend_status(ws: Workspace) -> list[dict[str, Any]]:
    """Each configured backend: name, availability, endpoint, health-cache age, last error, sync count."""
    return ws.external().status() if ws.config.backends else []


def _current_hashes(ws: Workspace) -> dict[str, str]:
    """Every memory name and content hash, after an incremental refresh (sync must see every change)."""
    with ws.lock:
        ws.index.refresh()
        return ws.index.indexed(lambda: queries.current_hashes(ws.conn))


def _recorded(ws: Workspace, name: str) -> Memory:
    """The memory as sync sends it: a ``created`` its front matter leaves out comes from git (its record time)."""
    memory = ws.store.read(name)
    if memory.created is not None:
        return memory
    return ws.index.indexed(lambda: ws.activity().dated(memory, ws.conn))


def sync(
    ws: Workspace, *, backend: str | None = None, changes: str = "all", dry_run: bool = False, force: bool = False
) -> list[Any]:
    """See ``Router.sync``: the canonical memories one way to the backends; one ``SyncReport`` per backend."""
    return ws.index.translated(
        lambda: ws.external().sync(
            lambda name: _recorded(ws, name),
            lambda: _current_hashes(ws),
            backend=backend,
            changes=changes,
            dry_run=dry_run,
            force=force,
        )  # fmt: skip
    )


def sync_states(ws: Workspace, name: str, content_hash: str) -> list[tuple[str, str, str]]:
    """See ``Router.sync_states``: (backend, state, why) of one memory on each backend that syncs."""
    return ws.external().sync_states(name, content_hash) if ws.config.backends else []


def validate(ws: Workspace, *, backend: str | None = None, check_remote: bool = False) -> list[FreshnessReport]:
    """See ``Router.validate``: the freshness report per backend, local state only unless ``check_remote``."""
    current = _current_hashes(ws)
    return ws.index.indexed(lambda: ws.external().validate(current, backend=backend, check_remote=check_remote))
