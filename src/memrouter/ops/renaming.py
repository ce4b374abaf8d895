"""Renaming a memory: move its file and rewrite ``mem:<old>`` references everywhere, under locks.

The move holds both names' locks from the read to the index update; each
memory whose references are rewritten is its own read-modify-write under its
lock (docs/architecture.md "Many processes"). A memory whose bytes do not
hold ``mem:<old>`` is passed over without its lock or a parse.
"""

from __future__ import annotations

from pathlib import Path

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.core.model import Memory
from memrouter.core.names import validate_name
from memrouter.ops.audit import audited
from memrouter.ops.write_guard import CONTENT, guarded
from memrouter.store.edit import REFERENCE_PREFIX, rewrite_references

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.ops.workspace import Workspace

__all__ = ["rename"]


@audited("rename")
def rename(ws: Workspace, old: str, new: str, *, actor: str | None = None) -> tuple[Memory, tuple[str, ...]]:
    """See ``Router.rename``. The moved text passes the write guard (``memrouter.ops.write_guard``); rewriting
    ``mem:`` references in other memories adds no text of its own."""
    with ws.lock:
        return _rename(ws, old, new, actor)


def _rename(ws: Workspace, old: str, new: str, actor: str | None) -> tuple[Memory, tuple[str, ...]]:
    store, index = ws.store, ws.index
    source = validate_name(old, strict=False)
    target = validate_name(new, strict=True)
    if target == source:
        raise InvalidInput(f"memory {source!r} already has that name")
    with store.lock(source, target):
        memory = store.read(source)
        text, _ = guarded(index, target, memory.text, actor=actor, purpose=CONTENT)
        moved = store.write(target, text, expected_hash="")
        try:
            store.delete(memory.name, expected_hash=memory.hash)
        except (Conflict, NotFound):
            store.delete(moved.memory.name, expected_hash=moved.memory.hash)
            raise
        index.unindex(memory.name)
        index.index_written(moved)
    rewritten: list[str] = []
    needle = (REFERENCE_PREFIX + memory.name).encode()  # every reference holds these bytes
    for stat in list(store.scan()):
        try:
            if needle not in store.read_bytes(stat.name, Path(stat.path)):  # the scan's path: already checked
                continue  # nothing to rewrite: neither locked nor parsed
        except (NotFound, InvalidInput):
            continue
        with store.lock(stat.name):
            try:
                other = store.read(stat.name)
            except (NotFound, InvalidInput):
                continue
            text, count = rewrite_references(other.text, memory.name, moved.memory.name)
            if count:
                index.index_written(store.write(other.name, text, expected_hash=other.hash))
                rewritten.append(other.name)
    result = store.read(moved.memory.name) if moved.memory.name in rewritten else moved.memory
    return result, tuple(rewritten)
