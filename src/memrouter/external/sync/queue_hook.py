"""Queue the staged memory changes of a commit: the body of memrouter's git pre-commit hook.

This module is stdlib-only and never imports memrouter, so ``memrouter hook
install`` can copy it next to the hook and run it with ``python -S``
(independent of whether memrouter still imports): it reads
``git diff --cached --name-status -M -z``, keeps the entries under the
memories folder, and appends them to the queue file atomically (a lock file,
then write-to-temporary and rename). ``main`` never raises and always
returns 0: a hook must never block a commit.

It runs on every commit, so its own start-up is kept small: the hook imports
it as a module (so its bytecode is cached), and at module level it imports
only ``os`` and ``sys`` (``json``, ``re``, ``subprocess`` and
``tempfile`` would triple the hook's time). The queue is written one entry
per line, ``"at"`` last, so the hook can merge entries it wrote without a
JSON parser; a queue in any other layout is read with ``json``.

Queue file format (JSON)::

    {"version": 1, "entries": [{"op": "upsert"|"delete"|"rename",
                                "name": "ci/flaky", "old": "ci/old-name", "at": 1700000000.0}]}

``memrouter sync --from-queue`` drains it (``memrouter.external.sync.queue``).
"""

import os
import sys

TYPE_CHECKING = False  # typing itself is not imported: it costs more than the rest of the hook
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "anchored_staged", "append_entries", "load_queue", "locked", "main", "parse_name_status", "report_stale",
    "save_queue", "staged_entries",
]  # fmt: skip

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


def parse_name_status(output: str, prefix: str) -> "list[dict[str, Any]]":
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


def _run_git(args: list[str], cwd: str | None) -> bytes:
    """The standard output of ``git ARGS`` (``OSError`` when it fails), without importing subprocess."""
    read_end, write_end = os.pipe()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        previous = os.getcwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            pid = os.posix_spawnp(
                "git", ["git", *args], os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, write_end, 1),
                              (os.POSIX_SPAWN_DUP2, devnull, 2)],
            )  # fmt: skip
        finally:
            if cwd is not None:
                os.chdir(previous)
        os.close(write_end)
        write_end = -1
        chunks = []
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_end)
        os.close(devnull)
        if write_end >= 0:
            os.close(write_end)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(f"git {args[0]} failed with status {os.waitstatus_to_exitcode(status)}")
    return b"".join(chunks)


def staged_entries(prefix: str, cwd: str | None = None) -> "list[dict[str, Any]]":
    """The staged changes under ``prefix`` (a path relative to the repository's top folder)."""
    output = _run_git(["diff", "--cached", "--name-status", "-M", "-z", "--no-color", "--", prefix or "."], cwd)
    return parse_name_status(output.decode("utf-8", errors="surrogateescape"), prefix)


class locked:  # noqa: N801 - used like a function: ``with locked(path):``
    """Hold an exclusive lock beside the queue file (``<path>.lock``) while reading and rewriting it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handle = -1

    def __enter__(self) -> None:
        folder = os.path.dirname(self.path) or "."
        os.makedirs(folder, exist_ok=True)
        self.handle = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl

            fcntl.flock(self.handle, fcntl.LOCK_EX)
        except ImportError:  # no flock on this platform: the atomic rename still protects readers
            pass

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.handle)


_HEAD = f'{{"version": {VERSION}, "entries": ['
_TAIL = "]}"
_ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


def _quote(text: str) -> str:
    """``text`` as a JSON string (non-ASCII kept as UTF-8)."""
    return '"' + text.translate(_ESCAPES) + '"'


def _line(entry: "dict[str, Any]") -> str:
    """One entry as one line of JSON, ``"at"`` last (what the hook merges on without parsing)."""
    parts = [f'"op": {_quote(str(entry.get("op")))}', f'"name": {_quote(str(entry.get("name")))}']
    if entry.get("old"):
        parts.append(f'"old": {_quote(str(entry["old"]))}')
    return "{" + ", ".join(parts) + f', "at": {float(entry.get("at") or 0.0)!r}' + "}"


def _lines(path: str) -> list[str] | None:
    """The entry lines of a queue in the layout ``save_queue`` writes; None for any other layout."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return []
    rows = text.split("\n")
    while rows and not rows[-1]:
        rows.pop()
    if not rows or rows[0] != _HEAD or rows[-1] != _TAIL:
        return None
    entries = [row[:-1] if row.endswith(",") else row for row in rows[1:-1]]
    if not all(row.startswith('{"op": ') and row.endswith("}") and ', "at": ' in row for row in entries):
        return None
    return entries


def load_queue(path: str) -> "list[dict[str, Any]]":
    """The entries in the queue file (none when it is missing or unreadable)."""
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)]


def _write(path: str, lines: list[str]) -> None:
    """Replace the queue file atomically (temporary file in the same folder, then rename).

    No fsync: it would double the hook's time, and a queue lost to a power
    cut is recovered by ``memrouter sync --all`` (sync goes by hash).
    """
    temporary = f"{path}.{os.getpid()}.tmp"
    body = _HEAD + "\n" + ",\n".join(lines) + ("\n" if lines else "") + _TAIL + "\n"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, body.encode("utf-8", errors="surrogateescape"))
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass  # the temporary file is already gone; the original error matters
        raise


def save_queue(path: str, entries: "list[dict[str, Any]]") -> None:
    """Replace the queue with ``entries`` (one per line; see the module docstring)."""
    _write(path, [_line(entry) for entry in entries])


def append_entries(path: str, new: "list[dict[str, Any]]", now: float | None = None) -> int:
    """Add ``new`` to the queue (an entry already queued moves to the end); return the queue length."""
    if now is None:
        import time

        now = time.time()
    fresh = [_line({**entry, "at": now}) for entry in new]
    keys = {line[: line.rindex(', "at": ')] for line in fresh}
    with locked(path):
        lines = _lines(path)
        if lines is None:  # written by something else: take the slow, parsing path
            lines = [_line(entry) for entry in load_queue(path)]
        lines = [line for line in lines if line[: line.rindex(', "at": ')] not in keys] + fresh
        _write(path, lines)
        return len(lines)


ANCHORED_PATHS = "anchored-paths"  # written by `memrouter verify` beside the queue (memrouter.ops.verify)


def anchored_staged(queue_path: str, cwd: str | None = None) -> bool:
    """Whether the commit being made changes a file some memory is anchored to (the list ``memrouter verify``
    keeps beside the queue; without it, as in a fresh clone, nothing is checked)."""
    listed = os.path.join(os.path.dirname(queue_path) or ".", ANCHORED_PATHS)
    try:
        with open(listed, encoding="utf-8") as handle:
            anchored = set(handle.read().splitlines())
    except OSError:
        return False
    if not anchored:
        return False
    output = _run_git(["diff", "--cached", "--name-only", "--no-renames", "-z"], cwd)
    return any(path in anchored for path in output.decode("utf-8", errors="surrogateescape").split("\0") if path)


def report_stale(prefix: str, queue_path: str) -> None:
    """Print (on standard error) the memories the staged changes make stale or broken: ``memrouter verify
    --staged`` with this interpreter, run only when an anchored file is staged. Never fails the commit."""
    if not anchored_staged(queue_path):
        return
    index_dir = os.path.dirname(queue_path) or "."
    args = [sys.executable, "-m", "memrouter", "--root", prefix or ".", "--index-dir", index_dir, "verify", "--staged"]
    pid = os.posix_spawn(sys.executable, args, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, 2, 1)])
    os.waitpid(pid, 0)


def main(argv: list[str] | None = None) -> int:
    """``queue_hook.py PREFIX QUEUE_PATH [--report]``: queue the staged changes and, with ``--report``, show the
    memories they make stale; always returns 0."""
    args = sys.argv[1:] if argv is None else argv
    try:
        prefix, queue_path = args[0], args[1]
        entries = staged_entries(prefix)
        if entries:
            append_entries(queue_path, entries)
        if "--report" in args[2:]:
            report_stale(prefix, queue_path)
    except BaseException as exc:  # noqa: BLE001 - a hook must never fail a commit
        try:
            sys.stderr.write(f"memrouter hook: changes not queued ({type(exc).__name__}: {exc})\n")
        except BaseException:  # noqa: BLE001
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
