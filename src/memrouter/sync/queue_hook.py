"""Queue the staged memory changes of a commit: the body of memrouter's git pre-commit hook.

This module is stdlib-only and never imports memrouter, so ``memrouter hook
install`` can copy it next to the hook and run it with ``python -S`` (fast,
and independent of whether memrouter still imports): it reads
``git diff --cached --name-status -M -z``, keeps the entries under the
memories folder, and appends them to the queue file atomically (a lock file,
then write-to-temporary and rename). ``main`` never raises and always
returns 0: a hook must never block a commit.

Queue file format (JSON)::

    {"version": 1, "entries": [{"op": "upsert"|"delete"|"rename",
                                "name": "ci/flaky", "old": "ci/old-name", "at": 1700000000.0}]}

``memrouter sync --from-queue`` drains it (``memrouter.sync.queue``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["append_entries", "load_queue", "locked", "main", "parse_name_status", "save_queue", "staged_entries"]

VERSION = 1
SUFFIX = ".md"


def _name(path: str, prefix: str) -> str | None:
    """The memory name of a repository path, or None when it is not a memory file."""
    head = prefix.rstrip("/") + "/" if prefix else ""
    if not path.startswith(head) or not path.endswith(SUFFIX):
        return None
    name = path[len(head) : -len(SUFFIX)]
    if not name or any(part.startswith(".") or not part for part in name.split("/")):
        return None
    return name


def parse_name_status(output: str, prefix: str) -> list[dict[str, Any]]:
    """Queue entries from ``git diff --cached --name-status -M -z`` output, for paths under ``prefix``."""
    tokens = output.split("\0")
    entries: list[dict[str, Any]] = []
    index = 0
    while index < len(tokens):
        status = tokens[index]
        index += 1
        if not status:
            continue
        code = status[0]
        if code in "RC":
            old_path, new_path = tokens[index], tokens[index + 1]
            index += 2
            old, new = _name(old_path, prefix), _name(new_path, prefix)
            if code == "R" and old and new:
                entries.append({"op": "rename", "name": new, "old": old})
            else:
                if code == "R" and old:
                    entries.append({"op": "delete", "name": old})
                if new:
                    entries.append({"op": "upsert", "name": new})
            continue
        path = tokens[index]
        index += 1
        name = _name(path, prefix)
        if name is None:
            continue
        entries.append({"op": "delete" if code == "D" else "upsert", "name": name})
    return entries


def staged_entries(prefix: str, cwd: str | None = None) -> list[dict[str, Any]]:
    """The staged changes under ``prefix`` (a path relative to the repository's top folder)."""
    output = subprocess.run(
        ["git", "diff", "--cached", "--name-status", "-M", "-z", "--no-color", "--", prefix or "."],
        cwd=cwd,
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode("utf-8", errors="surrogateescape")
    return parse_name_status(output, prefix)


@contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock beside the queue file (``<path>.lock``) while reading and rewriting it."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    handle = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except ImportError:  # no flock on this platform: the atomic rename still protects readers
            pass
        yield
    finally:
        os.close(handle)


def load_queue(path: str) -> list[dict[str, Any]]:
    """The entries in the queue file (none when it is missing or unreadable)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)]


def save_queue(path: str, entries: list[dict[str, Any]]) -> None:
    """Replace the queue file atomically (temporary file in the same folder, then rename)."""
    folder = os.path.dirname(path) or "."
    fd, temporary = tempfile.mkstemp(prefix=".sync-queue-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"version": VERSION, "entries": entries}, handle, ensure_ascii=False, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _key(entry: dict[str, Any]) -> tuple[str, str, str]:
    return (str(entry.get("op")), str(entry.get("name")), str(entry.get("old") or ""))


def append_entries(path: str, new: list[dict[str, Any]], now: float | None = None) -> int:
    """Add ``new`` to the queue (an entry already queued moves to the end); return the queue length."""
    stamp = time.time() if now is None else now
    with locked(path):
        fresh = {_key(e) for e in new}
        entries = [e for e in load_queue(path) if _key(e) not in fresh]
        entries += [{**e, "at": stamp} for e in new]
        save_queue(path, entries)
        return len(entries)


def main(argv: list[str] | None = None) -> int:
    """``queue_hook.py PREFIX QUEUE_PATH``: queue the staged changes; always returns 0."""
    args = sys.argv[1:] if argv is None else argv
    try:
        prefix, queue_path = args[0], args[1]
        entries = staged_entries(prefix)
        if entries:
            append_entries(queue_path, entries)
    except BaseException as exc:  # noqa: BLE001 - a hook must never fail a commit
        try:
            sys.stderr.write(f"memrouter hook: changes not queued ({type(exc).__name__}: {exc})\n")
        except BaseException:  # noqa: BLE001
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
