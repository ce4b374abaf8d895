"""The memories folder as a tree of files, for faces that speak in files (Anthropic's memory tool).

A file-speaking client creates, rewrites, deletes and moves whole files and
folders; here each of those is a memory write like any other: the text passes
the write guard (``VERBATIM``: exactly as sent, so a secret or a near-copy is
refused and nothing is held or flagged), each file changes under its memory's
lock, the index follows in the same call, and the audit log sees every change
(the store's observer). Unlike ``save``, a file may be empty, and a move
rewrites no ``mem:`` references: a file client expects its other files to stay
as it left them. Folders are kept when their last file goes (the store drops
emptied folders), as a file system keeps them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.core.names import SUFFIX, name_for_path, validate_name
from memrouter.ops.audit import audited
from memrouter.ops.lifecycle import Lifecycle
from memrouter.ops.write_guard import CONTENT, VERBATIM, guarded

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.core.model import Memory
    from memrouter.ops.workspace import Workspace

__all__ = ["Entry", "delete_file", "delete_folder", "entries", "move_file", "move_folder", "read_text", "write_text"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of a folder listing: its path under the listed folder (``/`` separated), and its size on disk."""

    path: str
    is_folder: bool
    size: int


def entries(ws: Workspace, folder: str, depth: int, *, label: Callable[[str], str] = str) -> list[Entry]:
    """The memory files and folders under ``folder`` (``""``: the root), ``depth`` levels deep, each
    folder before what it holds, by name; dot entries, other files and links that leave the root are
    left out. ``label`` names a file as the client knows it (from its name on disk); entries sort by it."""
    root = ws.store.root.resolve()
    found: list[Entry] = []

    def walk(path: Path, prefix: str, level: int) -> None:
        try:
            children = [(child, label(child.name) if child.is_file() else child.name) for child in os.scandir(path)]
        except OSError:
            return
        for child, shown in sorted(children, key=lambda pair: pair[1]):
            if child.name.startswith("."):
                continue
            try:
                if not Path(os.path.realpath(child.path)).is_relative_to(root):
                    continue
                info = child.stat()
            except OSError:
                continue
            relative = f"{prefix}{shown}"
            if child.is_dir():
                found.append(Entry(relative, True, info.st_size))
                if level < depth:
                    walk(Path(child.path), relative + "/", level + 1)
            elif child.is_file() and child.name.endswith(SUFFIX):
                found.append(Entry(relative, False, info.st_size))

    walk(ws.store.root / folder if folder else ws.store.root, "", 1)
    return found


def read_text(ws: Workspace, name: str) -> str:
    """The file text of memory ``name`` exactly as stored (``InvalidInput`` if it is not UTF-8)."""
    raw = ws.store.read_bytes(validate_name(name, strict=False))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"memory {name!r} is not UTF-8 text") from exc


@audited("save")
def write_text(ws: Workspace, name: str, text: str, *, expected_hash: str | None, actor: str | None) -> Memory:
    """Write ``text`` (possibly empty) as memory ``name`` exactly, if the guard lets it, and index it.

    ``expected_hash``: ``""`` for a new memory, the hash last read for a rewrite (``Conflict`` otherwise).
    """
    name = validate_name(name, strict=False)
    text, _ = guarded(ws.index, name, text, actor=actor, purpose=VERBATIM)
    lifecycle = Lifecycle(ws.store, ws.index, ws.lock, ws.clock)
    with ws.lock, lifecycle.holding(name), ws.store.lock(name):
        written = ws.store.write(name, text, expected_hash=expected_hash)
        ws.index.index_written(written)
    return written.memory


@audited("delete")
def delete_file(ws: Workspace, name: str) -> Memory:
    """Delete memory ``name`` and its index rows; its folder stays."""
    name = validate_name(name, strict=False)
    with ws.lock, ws.store.lock(name):
        folder = ws.store.path_for(name).parent
        memory = ws.store.delete(name)
        ws.index.unindex(memory.name)
        folder.mkdir(parents=True, exist_ok=True)
    return memory


@audited("delete")
def delete_folder(ws: Workspace, folder: str) -> list[str]:
    """Delete every memory under ``folder`` (each through the store and the index), then the folder."""
    path = _folder_path(ws, folder)
    deleted: list[str] = []
    with ws.lock:
        for name in _memories_under(ws, path):
            with ws.store.lock(name):
                try:
                    memory = ws.store.delete(name)
                except NotFound:
                    continue  # gone meanwhile
                ws.index.unindex(memory.name)
                deleted.append(memory.name)
        shutil.rmtree(path, ignore_errors=True)  # what is left: empty folders, files that are not memories
        path.parent.mkdir(parents=True, exist_ok=True)  # the store dropped the folders the deletes emptied
    return deleted


@audited("rename")
def move_file(ws: Workspace, old: str, new: str, *, actor: str | None) -> Memory:
    """Move memory ``old`` to the new name ``new`` (which must not exist), text unchanged; its old folder stays."""
    source = validate_name(old, strict=False)
    target = validate_name(new, strict=True)
    with ws.lock:
        return _move(ws, source, target, actor)


@audited("rename")
def move_folder(ws: Workspace, old: str, new: str, *, actor: str | None) -> list[str]:
    """Move folder ``old`` (its memories, and whatever else it holds) to ``new``, which must not exist."""
    source, target = _folder_path(ws, old), ws.store.root / validate_name(new, strict=True)
    if target.exists():
        raise Conflict(f"{new!r} already exists")
    if target.resolve().is_relative_to(source.resolve()):
        raise InvalidInput(f"cannot move folder {old!r} into itself")
    moved: list[str] = []
    with ws.lock:
        plan = [
            (name, validate_name(f"{new}/{name_for_path(source, ws.store.path_for(name))}", strict=True))
            for name in _memories_under(ws, source)
        ]
        for name, target_name in plan:  # every text passes the guard before any file moves
            guarded(ws.index, target_name, ws.store.read(name).text, actor=actor, purpose=CONTENT)
        for name, target_name in plan:
            moved.append(_move(ws, name, target_name, actor).name)
        target.mkdir(parents=True, exist_ok=True)
        for left in sorted(source.rglob("*")):  # what the store does not hold: empty folders, other files
            if left.is_file() or not any(left.iterdir()):
                destination = target / left.relative_to(source)
                destination.parent.mkdir(parents=True, exist_ok=True)
                if not destination.exists():
                    shutil.move(left, destination)
        shutil.rmtree(source, ignore_errors=True)
    return moved


def _move(ws: Workspace, source: str, target: str, actor: str | None) -> Memory:
    with ws.store.lock(source, target):
        folder = ws.store.path_for(source).parent
        memory = ws.store.read(source)
        text, _ = guarded(ws.index, target, memory.text, actor=actor, purpose=CONTENT)
        moved = ws.store.write(target, text, expected_hash="")
        try:
            ws.store.delete(memory.name, expected_hash=memory.hash)
        except (Conflict, NotFound):
            ws.store.delete(moved.memory.name, expected_hash=moved.memory.hash)
            raise
        ws.index.unindex(memory.name)
        ws.index.index_written(moved)
        folder.mkdir(parents=True, exist_ok=True)
    return moved.memory


def _folder_path(ws: Workspace, folder: str) -> Path:
    """The folder ``folder`` (a path under the root, as it is on disk: ``x.md`` may name a folder)."""
    parts = folder.split("/")
    if folder.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(f"invalid folder {folder!r}: a path under the memories root")
    path = ws.store.root.joinpath(*parts)
    if not path.is_dir():
        raise NotFound(f"no folder {folder!r}")
    return path


def _memories_under(ws: Workspace, folder: Path) -> list[str]:
    return sorted(stat.name for stat in ws.store.scan() if Path(stat.path).is_relative_to(folder))
