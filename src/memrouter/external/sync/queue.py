"""The sync queue and git's view of staged changes, as ``Change`` lists for the sync engine.

The pre-commit hook (``memrouter.external.sync.queue_hook``) appends entries to
``<state dir>/sync-queue.json``; ``memrouter sync --from-queue`` reads them,
syncs, and removes only the entries whose memories were synced (an entry the
hook queued again meanwhile stays). ``memrouter sync --staged`` reads the
same information straight from ``git diff --cached``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.external.sync.engine import Change
from memrouter.external.sync.queue_hook import load_queue, locked, save_queue, staged_entries

__all__ = ["QUEUE_FILE", "changes_from_entries", "git_toplevel", "memories_prefix", "read_queue",
           "remove_done", "staged_changes"]  # fmt: skip

QUEUE_FILE = "sync-queue.json"


def git_toplevel(folder: Path) -> Path:
    """The top folder of the git work tree holding ``folder`` (``InvalidInput`` outside one)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InvalidInput(f"{folder} is not inside a git work tree") from exc
    return Path(os.fsdecode(done.stdout.strip())).resolve()


def memories_prefix(root: Path, toplevel: Path) -> str:
    """The memories folder as a path relative to the repository top (POSIX), ``""`` for the top itself."""
    try:
        relative = root.resolve().relative_to(toplevel)
    except ValueError as exc:
        raise InvalidInput(f"the memories root {root} is not inside the git repository {toplevel}") from exc
    prefix = relative.as_posix()
    return "" if prefix == "." else prefix


def changes_from_entries(entries: list[dict[str, Any]]) -> list[Change]:
    """Queue (or ``git diff``) entries as engine changes, in order."""
    changes = []
    for entry in entries:
        op = str(entry.get("op"))
        name = str(entry["name"])
        old = entry.get("old")
        if op == "rename" and isinstance(old, str):
            changes.append(Change("rename", name, old=old))
        elif op in ("upsert", "delete"):
            changes.append(Change(op, name))
    return changes


def staged_changes(root: Path) -> list[Change]:
    """The memory changes staged in the git index of the repository holding ``root``."""
    toplevel = git_toplevel(root)
    try:
        entries = staged_entries(memories_prefix(root, toplevel), cwd=str(toplevel))
    except (OSError, subprocess.SubprocessError) as exc:
        raise InvalidInput(f"cannot read the staged changes: {exc}") from exc
    return changes_from_entries(entries)


def read_queue(path: Path) -> list[dict[str, Any]]:
    """The queued entries (none when there is no queue file)."""
    with locked(str(path)):
        return load_queue(str(path))


def remove_done(path: Path, processed: list[dict[str, Any]], done: Collection[str]) -> int:
    """Drop the ``processed`` entries whose every name is in ``done``; return how many remain.

    Entries queued again since they were read (a newer ``at``) are kept.
    """

    def key(entry: dict[str, Any]) -> tuple[str, str, str, str]:
        return (str(entry.get("op")), str(entry.get("name")), str(entry.get("old") or ""), repr(entry.get("at")))

    finished = {
        key(entry) for entry in processed
        if entry.get("name") in done and (not entry.get("old") or entry.get("old") in done)
    }  # fmt: skip
    with locked(str(path)):
        remaining = [entry for entry in load_queue(str(path)) if key(entry) not in finished]
        if remaining or path.exists():
            save_queue(str(path), remaining)
        return len(remaining)
