"""Provenance: who wrote a memory, from what, and when.

A memory saved through the command line or the MCP server is stamped with
``author`` (``user:<git user.name>``, or ``agent:<id>``) and ``created`` (UTC
ISO date-time) unless its front matter already says; a memory replaced by a
save keeps the author and creation time its file had. Serena's
``write_memory`` stays verbatim: its provenance is the audit log's and git's.
For a file whose front matter does not say (written by hand), ``provenance``
reads the author and dates from the file's git history, and says so in
``from_git``; what git does not know either stays empty, never guessed.
"""

from __future__ import annotations

from pathlib import Path

from memrouter.core.errors import MemoryRouterError, NotFound
from memrouter.core.model import Memory, Provenance
from memrouter.core.query import iso_time
from memrouter.ops.history import MAX_VERSIONS, versions
from memrouter.ops.write_guard import refuse_secrets
from memrouter.ops.writes import save
from memrouter.store import frontmatter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.ops.history import Version
    from memrouter.ops.workspace import Workspace

__all__ = ["provenance_of", "save_stamped", "stamp"]


def stamp(content: str, *, author: str | None, now: float, existing: Memory | None = None) -> str:
    """``content`` with ``author`` and ``created`` added to its front matter where it has none.

    ``existing`` (the memory a save replaces) gives its own author and
    creation time first; a new memory gets ``author`` and ``now``.
    """

    if not isinstance(content, str) or not content.strip():
        return content  # nothing to stamp: the save refuses it with its own message
    parsed = frontmatter.parse(content)
    if parsed.problem is not None:
        return content  # the front matter cannot be read: leave it as written (the save reports it)
    fields = parsed.data
    changes: dict[str, str] = {}
    if "author" not in fields:
        keep = existing.author if existing is not None else None
        if keep or author:
            changes["author"] = keep or author or ""
    if "created" not in fields:
        changes["created"] = (existing.created if existing is not None else None) or iso_time(now)
    return frontmatter.update(content, changes) if changes else content


def provenance_of(memory: Memory) -> Provenance:
    """The memory's provenance: its front matter, and git history for what that does not say."""
    from_git: list[str] = []
    author, created, updated = memory.author, memory.created, memory.updated
    if author is None or created is None or updated is None:
        versions = _versions(Path(memory.path))
        if versions:
            first, last = versions[-1], versions[0]  # newest first
            if author is None and first.author:
                author = f"user:{first.author}"
                from_git.append("author")
            if created is None:
                created = first.date
                from_git.append("created")
            if updated is None and len(versions) > 1:
                updated = last.date
                from_git.append("updated")
    return Provenance(
        author=author, source=memory.source, created=created, updated=updated, confidence=memory.confidence,
        verified_by=memory.verified_by, from_git=tuple(from_git),
    )  # fmt: skip


def _versions(file: Path) -> list[Version]:

    try:
        return versions(file, MAX_VERSIONS)
    except (MemoryRouterError, OSError):  # not in a git repository, or git is missing
        return []


def save_stamped(ws: Workspace, content: str, name: str | None, *, actor: str | None, **fields: Any) -> Memory:
    """``Router.save`` with provenance: ``actor`` as the author and now as ``created`` where none is written.

    A ``name`` that exists already gives its author and creation time instead
    (``stamp``); an explicit ``author`` field wins over both.
    """
    existing = None
    if name is not None:
        try:
            existing = ws.store.read(name)  # what its front matter says, not dates filled in from git
        except NotFound:
            existing = None
    refuse_secrets(
        content, f"memory {name!r}" if name else "the memory"
    )  # before stamping: lines as the caller numbered them
    content = stamp(content, author=fields.get("author") or actor, now=ws.clock(), existing=existing)
    expected_hash = fields.pop("expected_hash", None)
    verbatim = fields.pop("verbatim", False)
    fresh = fields.pop("fresh", False)
    return save(
        ws, content, name, expected_hash=expected_hash, actor=actor, fields=fields, verbatim=verbatim, fresh=fresh
    )
