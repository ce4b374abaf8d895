"""Reading memories by name: one memory (now or as committed then), a listing, the pinned ones."""

from __future__ import annotations

import builtins

from memrouter.core.model import PENDING, Memory, MemorySummary
from memrouter.core.names import validate_name
from memrouter.core.query import make_filters
from memrouter.index.sqlite import queries
from memrouter.ops.history import (
    version_at,  # git, loaded by the calls that read history only
    versions,  # git, loaded by the calls that read history only
)
from memrouter.store import frontmatter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable

    from memrouter.ops.history import Version
    from memrouter.ops.workspace import Workspace

__all__ = ["get", "get_as_of", "history", "list_memories", "memory_names", "pinned"]


def get(ws: Workspace, name: str, as_of: str | None = None) -> Memory:
    """See ``Router.get``: the memory from its file (or as committed at ``as_of``), dates filled from git."""
    if as_of is not None:
        return get_as_of(ws, name, as_of)[0]
    memory = ws.store.read(name)
    ws.index.note_access([memory.name], ws.clock())  # for the janitor and the usage decay
    if memory.created is not None and memory.updated is not None:
        return memory
    return ws.index.indexed(lambda: ws.activity().dated(memory, ws.conn))


def list_memories(
    ws: Workspace,
    prefix: str | None = None,
    *,
    channels: Iterable[str] | str | None = None,
    kinds: Iterable[str] | str | None = None,
    scopes: Iterable[str] | str | None = None,
    statuses: Iterable[str] | str | None = None,
    tags: Iterable[str] | str | None = None,
) -> builtins.list[MemorySummary]:
    """See ``Router.list``: the indexed memories under ``prefix`` passing the filters, by name."""
    filters = make_filters(channels=channels, kinds=kinds, scopes=scopes, statuses=statuses, tags=tags, prefix=prefix)

    def listed() -> builtins.list[MemorySummary]:
        ws.ensure_fresh()
        return ws.reader.summaries(filters)

    return ws.index.indexed(listed)


def memory_names(ws: Workspace, prefix: str | None = None) -> builtins.list[str]:
    """See ``Router.names``: the names ``list`` would give, without reading the index when it was never built.

    A new project or worktree answers at once from the files (a stat of each, and the front matter of
    those that have one, for ``status: pending_review``): building the index first would make a first
    ``list_memories`` wait for every file's parsing. Once the index holds memories, it answers.
    """
    filters = make_filters(prefix=prefix)
    if not ws.index.indexed(lambda: queries.is_empty(ws.conn)):
        return [summary.name for summary in list_memories(ws, filters.prefix)]
    found = []
    for name, path, _, _ in ws.store.stat_files():
        if filters.prefix and not name.startswith(filters.prefix):
            continue
        if not _pending(path):
            found.append(name)
    return sorted(found)


def _pending(path: str) -> bool:
    """Whether the file's front matter says ``status: pending_review`` (read from its head alone)."""
    try:
        with open(path, "rb") as file:
            head = file.read(8192)
    except OSError:
        return False
    if not head.startswith(b"---"):
        return False
    parsed = frontmatter.parse(head.decode("utf-8", errors="replace"))
    return parsed.data.get("status") == PENDING


def pinned(ws: Workspace) -> builtins.list[str]:
    """See ``Router.pinned``: the names of the memories whose front matter says ``pinned: true``, in effect."""
    ws.ensure_fresh()
    return ws.index.indexed(lambda: queries.pinned_names(ws.conn))


def history(ws: Workspace, name: str, limit: int = 20) -> builtins.list[Version]:
    """See ``Router.history``: the commits that changed memory ``name`` (renames followed), newest first."""

    name = validate_name(name, strict=False)
    return versions(ws.store.path_for(name), limit)


def get_as_of(ws: Workspace, name: str, as_of: str) -> tuple[Memory, Version]:
    """See ``Router.get_as_of``: memory ``name`` as committed at ``as_of`` (a date or a commit)."""

    name = validate_name(name, strict=False)
    return version_at(name, ws.store.path_for(name), as_of)
