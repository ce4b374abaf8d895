"""Record time from git: when each memory file was first and last committed.

A memory's ``created``/``updated`` default to the first and last commit that
touched its file (renames followed), and the times of every commit between
are what "what changed last month" asks about. They are read with one
``git log --name-status`` over the memories folder and cached in the index
(``record_times``, migration ``0300``) with the commit they were read at;
when ``HEAD`` moves, only the new commits are read (``old..new``), unless
history was rewritten, which reads it all again. ``HEAD`` is read from the
files under ``.git`` (no subprocess), so checking costs microseconds.

A file never committed has no row: its file time stands in (see
``memrouter.index.sqlite.activity``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from memrouter.core.errors import MemoryRouterError
from memrouter.core.lazylog import LazyLogger
from memrouter.core.names import SUFFIX

__all__ = ["MAX_COMMITS", "git_head", "git_top", "refresh_record_times", "record_times"]

log = LazyLogger(__name__)

MAX_COMMITS = 200  # commit times kept per memory (the first is always kept: it is ``created``)
_HEAD_KEY = "record_head"
_SEPARATOR = "\x1e"


def git_top(folder: Path) -> Path | None:
    """The working tree holding ``folder`` (the nearest folder with a ``.git``), or ``None``."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def git_head(top: Path) -> str | None:
    """The commit ``HEAD`` names, read from the files (loose or packed refs, worktrees); ``None`` if unborn."""
    git = top / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            git = (top / git.read_text(encoding="utf-8").partition(":")[2].strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head[5:]
        for folder in (git, _common_dir(git)):
            loose = folder / ref
            if loose.is_file():
                return loose.read_text(encoding="utf-8").strip() or None
            packed = folder / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8").splitlines():
                    if line.endswith(" " + ref):
                        return line.split(" ", 1)[0]
    except OSError:
        return None
    return None


def _common_dir(git: Path) -> Path:
    try:
        return (git / (git / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return git


def refresh_record_times(conn: sqlite3.Connection, root: Path, top: Path | None) -> bool:
    """Bring ``record_times`` up to ``HEAD`` of the work tree ``top`` (``git_top(root)``); ``True`` if anything
    was read. Never raises on git trouble.

    Call it inside no transaction: it opens its own once git has answered.
    """
    head = git_head(top) if top is not None else None
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_HEAD_KEY,)).fetchone()
    seen = row[0] if row else None
    if top is None or head is None or head == seen:
        return False
    from memrouter.repo.git import GitSession  # lazy: a subprocess only when HEAD moved

    session = GitSession(top)
    try:
        folder = root.resolve().relative_to(top.resolve()).as_posix()
        incremental = (
            seen is not None and session.run("merge-base", "--is-ancestor", seen, head, check=False).returncode == 0
        )
        span = [f"{seen}..{head}"] if incremental else [head]
        output = session.run(
            "log", "--reverse", "--no-merges", f"--format={_SEPARATOR}%ct", "--name-status", "-M", *span, "--", folder
        ).stdout
    except (MemoryRouterError, OSError, ValueError) as exc:
        log.warning("record times from git not read: %s", exc)
        return False
    from memrouter.index.sqlite.connection import transaction

    prefix = "" if folder == "." else folder + "/"
    with transaction(conn):
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (_HEAD_KEY,)).fetchone()
        if (row[0] if row else None) != seen:
            return False  # another process brought the table up to date meanwhile: its rows stand
        times = _load(conn) if incremental else {}
        changed = _apply(times, output, prefix)
        if not incremental:
            conn.execute("DELETE FROM record_times")
        for name in changed:
            commits = times.get(name)
            if not commits:
                conn.execute("DELETE FROM record_times WHERE name = ?", (name,))
                continue
            kept = commits if len(commits) <= MAX_COMMITS else [commits[0], *commits[-(MAX_COMMITS - 1) :]]
            conn.execute(
                "INSERT OR REPLACE INTO record_times (name, created, updated, commits) VALUES (?, ?, ?, ?)",
                (name, kept[0], kept[-1], json.dumps(kept)),
            )
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_HEAD_KEY, head))
    return True


def _load(conn: sqlite3.Connection) -> dict[str, list[int]]:
    return {name: json.loads(commits) for name, commits in conn.execute("SELECT name, commits FROM record_times")}


def _apply(times: dict[str, list[int]], output: str, prefix: str) -> set[str]:
    """Replay ``git log --reverse --name-status`` onto ``times``; returns the names changed."""
    changed: set[str] = set()

    def name_of(path: str) -> str | None:
        if not path.startswith(prefix) or not path.endswith(SUFFIX):
            return None
        return path[len(prefix) : -len(SUFFIX)]

    for record in output.split(_SEPARATOR)[1:]:
        stamp, _, body = record.partition("\n")
        try:
            moment = int(stamp.strip())
        except ValueError:
            continue
        for line in body.splitlines():
            parts = line.split("\t")
            if len(parts) < 2 or not parts[0]:
                continue
            status, target = parts[0][0], name_of(parts[-1])
            if status == "D":
                if target is not None and times.pop(target, None) is not None:
                    changed.add(target)
                continue
            if status == "R" and len(parts) == 3:  # the history moves with the file
                source = name_of(parts[1])
                history = times.pop(source, []) if source is not None else []
                if source is not None:
                    changed.add(source)
                if target is not None:
                    times[target] = [*history, moment]
                    changed.add(target)
                continue
            if target is not None:
                times.setdefault(target, []).append(moment)
                changed.add(target)
    return changed


def record_times(conn: sqlite3.Connection, names: list[str] | None = None) -> dict[str, tuple[int, int]]:
    """``name -> (created, updated)`` in Unix seconds from the cache (all names when ``names`` is ``None``)."""
    if names is None:
        rows = conn.execute("SELECT name, created, updated FROM record_times")
        return {name: (created, updated) for name, created, updated in rows}
    found: dict[str, tuple[int, int]] = {}
    for start in range(0, len(names), 500):
        part = names[start : start + 500]
        sql = f"SELECT name, created, updated FROM record_times WHERE name IN ({', '.join('?' * len(part))})"
        found.update({name: (created, updated) for name, created, updated in conn.execute(sql, part)})
    return found
