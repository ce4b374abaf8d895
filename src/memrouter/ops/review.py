"""The review queue: memories written ``status: pending_review``, approved or rejected by someone else.

Where pending memories live: in the memories folder like any other, with
``status: pending_review`` in their front matter. So a pending memory is
committed with the change that made it and reviewed in the pull request,
survives an index rebuild (it is a file), and needs no second folder to
keep in step. Every read path leaves it out (``Filters.pending``): search in
every mode, ``list``, the MCP resources, sync to external services; only
reading it by its exact name, or asking for the status, shows it.

``approve`` sets it active and records the approver in ``verified_by``,
keeping its ``author``; the author can never approve its own memory (an
agent's write needs another agent or a person): neither the ``author`` its
front matter names nor the actor the audit log shows writing this very
content (Serena's ``write_memory`` stamps no author). ``reject`` deletes the file:
a rejected claim is not kept where anything could recall it (a git-ignored
folder would still be one ``cat`` away and grow forever); the audit log keeps
who rejected which hash and why, and git keeps the text if it was committed.
Both hold the memory's lock from the read to the write, with the same
``expected_hash`` check as every other write.
"""

from __future__ import annotations

import builtins
from pathlib import Path

from memrouter.core.errors import Conflict, InvalidInput
from memrouter.core.model import PENDING, Memory, MemorySummary, Provenance
from memrouter.core.names import validate_name
from memrouter.core.query import check_filter, make_filters
from memrouter.index.sqlite import queries
from memrouter.ops.audit import MAX_READ, acting_as, operation, read_audit
from memrouter.ops.provenance import provenance_of
from memrouter.store import frontmatter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.ops.audit import AuditEntry
    from memrouter.ops.workspace import Workspace

__all__ = ["approve", "audit", "pending", "provenance", "reject"]

MAX_REASON_CHARS = 500


def pending(ws: Workspace) -> builtins.list[MemorySummary]:
    """The memories waiting for review, by name."""

    def listed() -> builtins.list[MemorySummary]:
        ws.ensure_fresh()
        return queries.summaries(ws.index.conn, make_filters(statuses=PENDING))

    return ws.index.indexed(listed)


def approve(
    ws: Workspace, name: str, *, actor: str, reason: str | None = None, expected_hash: str | None = None
) -> Memory:
    """Make pending memory ``name`` active, verified by ``actor`` (never its own author)."""
    actor = check_filter("actor", actor)
    reason = _reason(reason, required=False)
    return _review(ws, name, actor, reason, expected_hash, approve=True)


def reject(ws: Workspace, name: str, *, actor: str, reason: str, expected_hash: str | None = None) -> Memory:
    """Delete pending memory ``name``; the audit log keeps ``actor``, the hash and ``reason``."""
    actor = check_filter("actor", actor)
    return _review(ws, name, actor, _reason(reason, required=True), expected_hash, approve=False)


def _review(
    ws: Workspace, name: str, actor: str, reason: str | None, expected_hash: str | None, *, approve: bool
) -> Memory:

    name = validate_name(name, strict=False)
    op_name = "approve" if approve else "reject"
    with ws.lock, ws.store.lock(name), acting_as(actor), operation(op_name) as op:
        memory = ws.store.read(name)
        if expected_hash is not None and memory.hash != expected_hash:
            raise Conflict(f"memory {name!r} changed since it was read; read it again and retry")
        if memory.status != PENDING:
            raise InvalidInput(f"memory {name!r} is not pending review (its status is {memory.status})")
        op.reason = reason
        if not approve:
            op.verdict = "rejected"
            gone = ws.store.delete(name, expected_hash=memory.hash)
            ws.index.unindex(gone.name)
            return gone
        if memory.author == actor or _wrote(ws, actor, memory):
            raise InvalidInput(f"{actor} wrote {name!r} and cannot approve it; another agent or a person must")
        op.verdict = "approved"
        text = frontmatter.update(memory.text, {"status": "active", "verified_by": actor})
        written = ws.store.write(name, text, expected_hash=memory.hash)
        ws.index.index_written(written)
        return written.memory


def _wrote(ws: Workspace, actor: str, memory: Memory) -> bool:
    """Whether the audit log says ``actor`` made this very content (a write that stamped no author)."""
    lines = read_audit(Path(ws.config.index_dir), name=memory.name, actor=actor, limit=MAX_READ)
    return any(entry.after == memory.hash for entry in lines)


def provenance(ws: Workspace, name: str) -> Provenance:
    """Who wrote memory ``name``, from what and when (git history for what its front matter does not say)."""
    return provenance_of(ws.store.read(name))


def audit(
    ws: Workspace, *, since: str | None = None, name: str | None = None, actor: str | None = None, limit: int = 200
) -> builtins.list[AuditEntry]:
    """The audit log's last ``limit`` lines passing the filters, oldest first (``memrouter.ops.audit``)."""
    return read_audit(Path(ws.config.index_dir), since=since, name=name, actor=actor, limit=limit)


def _reason(reason: object, *, required: bool) -> str | None:
    if reason is None or (isinstance(reason, str) and not reason.strip()):
        if required:
            raise InvalidInput("a rejection needs a reason")
        return None
    return check_filter("reason", reason, MAX_REASON_CHARS)
