"""Writing memories: save, edit, delete, and what the write guard would say about a text.

A write goes to the file first (the truth), then to the index in the same
call, both under the memory's lock, so it is visible at once; if the index is
busy past its wait limit the write still stands and the next refresh indexes
it. Every text passes the write guard (``memrouter.ops.write_guard``) before
anything is touched. Each call is one audited operation (``memrouter.ops.audit``).
"""

from __future__ import annotations

from memrouter.core.errors import Conflict, InvalidInput
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import FOLDER_KINDS, KIND_FOLDERS
from memrouter.core.names import validate_name
from memrouter.ops.audit import audited
from memrouter.ops.lifecycle import Lifecycle
from memrouter.ops.write_guard import CLAIMS, FULL, VERBATIM, guarded, verdict_for
from memrouter.store.compose import check_reason, compose
from memrouter.store.edit import replace_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.core.model import Memory
    from memrouter.guard import Verdict
    from memrouter.ops.workspace import Workspace

__all__ = ["check", "delete", "edit", "save"]

log = LazyLogger(__name__)
# How many numbered names a fresh save tries before asking for a name.
FRESH_SUFFIXES = 1000


@audited("save")
def save(
    ws: Workspace,
    content: str,
    name: str | None,
    *,
    expected_hash: str | None = None,
    actor: str | None = None,
    fields: dict[str, Any] | None = None,
    verbatim: bool = False,
    fresh: bool = False,
) -> Memory:
    """See ``Router.save``: compose, guard, place in a channel, write and index under the memory's lock.

    ``fresh`` (with no ``name``): the name made from the text never replaces a memory; a taken one
    gets ``-2``, ``-3``... (the MCP ``save_memory``: an agent that gives no name means a new memory).
    Kind and folder agree: a name under ``conventions/``, ``decisions/``, ``adr/`` or ``patterns/`` with
    no kind gets the folder's kind, and a memory of one of those kinds saved with no name goes to its folder.
    """
    fields = dict(fields or {})
    if not verbatim and fields.get("kind") is None and isinstance(name, str) and "/" in name:
        fields["kind"] = FOLDER_KINDS.get(name.split("/", 1)[0])  # conventions/x is a convention
    composed, text = compose(content, name, **fields)
    folder = KIND_FOLDERS.get(fields.get("kind") or "")
    if name is None and folder is not None and "/" not in composed:
        composed = validate_name(f"{folder}/{composed}", strict=False)  # a decision goes to decisions/
    if not verbatim and not text.endswith("\n"):
        text += "\n"  # a text file ends with a line end (git, diff and cat expect one); Serena's tools write as given
    lifecycle = Lifecycle(ws.store, ws.index, ws.lock, ws.clock)
    channel, kind = fields.get("channel"), fields.get("kind")
    home = placed = lifecycle.place(name, composed, channel, kind)
    if expected_hash is not None and not isinstance(expected_hash, str):
        raise InvalidInput("expected_hash must be text (a content hash, or '' for a new memory)")
    if fresh and name is None:
        placed, expected_hash = _free_name(ws, home), ""
    text, _ = guarded(ws.index, placed, text, actor=actor, purpose=VERBATIM if verbatim else FULL)
    with ws.lock, lifecycle.holding(placed), ws.store.lock(placed):
        if lifecycle.place(name, composed, channel, kind) != home:  # a sprint opened or closed meanwhile
            raise Conflict(f"the open sprint changed while {placed!r} was saved; save it again")
        written = ws.store.write(placed, text, expected_hash=expected_hash)
        ws.index.index_written(written)
    return written.memory


def _free_name(ws: Workspace, name: str) -> str:
    """``name``, or the first of ``name-2``, ``name-3``... that no memory has."""
    candidate, number = name, 1
    while ws.store.exists(candidate):
        number += 1
        if number > FRESH_SUFFIXES:
            raise Conflict(f"memories {name!r} to {candidate!r} all exist; give the memory a name")
        candidate = validate_name(f"{name}-{number}", strict=False)
    return candidate


@audited("edit")
def edit(
    ws: Workspace,
    name: str,
    needle: str,
    repl: str,
    *,
    mode: str = "literal",
    allow_multiple: bool = False,
    actor: str | None = None,
    verbatim: bool = False,
) -> tuple[Memory, int]:
    """See ``Router.edit``: replace text under the memory's lock; the result passes the guard."""
    name = validate_name(name, strict=False)
    with ws.lock, ws.store.lock(name):
        memory = ws.store.read(name)
        text, count = replace_text(memory.text, needle, repl, mode, allow_multiple_occurrences=allow_multiple)
        text, _ = guarded(ws.index, memory.name, text, actor=actor, purpose=VERBATIM if verbatim else CLAIMS)
        written = ws.store.write(memory.name, text, expected_hash=memory.hash)
        ws.index.index_written(written)
    return written.memory, count


@audited("delete")
def delete(ws: Workspace, name: str, reason: str | None = None, *, expected_hash: str | None = None) -> Memory:
    """See ``Router.delete``: remove the file and its index rows under the memory's lock."""
    reason = check_reason(reason)
    name = validate_name(name, strict=False)
    with ws.lock, ws.store.lock(name):
        memory = ws.store.delete(name, expected_hash=expected_hash)
        ws.index.unindex(memory.name)
    log.info("deleted memory %s%s", memory.name, f" ({reason})" if reason else "")
    return memory


def check(ws: Workspace, content: str, name: str | None = None, *, actor: str | None = None) -> Verdict:
    """What the write guard would decide about saving ``content`` as ``name``; nothing is written."""
    return verdict_for(ws.index, name or "(new memory)", content, actor=actor)[1]
