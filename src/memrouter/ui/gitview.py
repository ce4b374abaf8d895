"""The git history the pages show, read once per ``HEAD``: the search page's slider, the timeline's commits.

Both depend only on the commit ``HEAD`` names, which ``recordtime.git_head``
reads from the files under ``.git`` (no subprocess, microseconds). So
``git log`` runs when ``HEAD`` has moved since the last read, not on every
request, and the work tree holding the memories is found once (again only
while there is none: a folder put under git after the UI started is seen).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memrouter.index.sqlite.recordtime import git_head, git_top
from memrouter.repo.git import GitError, GitSession

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["GitView", "SLIDER_COMMITS", "TIMELINE_COMMITS"]

SLIDER_COMMITS = 30
TIMELINE_COMMITS = 30
_CHANGES = {"A": "created", "M": "changed", "D": "deleted", "R": "renamed"}

T = TypeVar("T")


class GitView:
    """The git facts of the repository holding ``root`` (the memories folder), cached per ``HEAD``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._top: Path | None = None
        self._cached: dict[str, tuple[str, Any]] = {}
        self._lock = threading.Lock()
        self.reads = 0  # how many times git was run (the cache's misses)

    @property
    def top(self) -> Path | None:
        """The work tree holding the memories, or None outside git."""
        if self._top is None:
            self._top = git_top(self.root)
        return self._top

    def _cached_per_head(self, key: str, read: Callable[[Path], T], empty: T) -> T:
        top = self.top
        head = git_head(top) if top is not None else None
        if top is None or head is None:
            return empty  # not in git, or nothing committed yet
        with self._lock:
            hit = self._cached.get(key)
            if hit is not None and hit[0] == head:
                return hit[1]  # type: ignore[no-any-return]
        value = read(top)
        with self._lock:
            self.reads += 1
            self._cached[key] = (head, value)  # read at or after ``head``: a later move reads again
        return value

    def slider_commits(self) -> list[dict[str, str]]:
        """The project's last commits, oldest first, for the time travel slider (none outside git)."""
        return self._cached_per_head("slider", _slider_commits, [])

    def memory_commits(self) -> list[dict[str, Any]]:
        """The last commits that touched the memories folder, newest first, each with the memories it changed."""
        return self._cached_per_head("timeline", lambda top: _memory_commits(top, self.root), [])


def _slider_commits(top: Path) -> list[dict[str, str]]:

    try:
        found = GitSession(top).get_recent_commits(SLIDER_COMMITS)
    except GitError:
        return []
    return [
        {"commit": c["short"], "label": f"{c['date'][:10]} {c['short']} {c['subject'][:60]}"}
        for c in reversed(found["commits"])
    ]


def _memory_commits(top: Path, root: Path) -> list[dict[str, Any]]:

    try:
        folder = root.relative_to(top.resolve()).as_posix()
        output = GitSession(top).run(  # pathspecs are relative to the working folder: run from the top
            "log", "--format=%x1e%h%x1f%aI%x1f%an%x1f%s", "--name-status", f"--max-count={TIMELINE_COMMITS}",
            "--", folder,
        ).stdout  # fmt: skip
    except (GitError, ValueError):
        return []
    prefix = "" if folder == "." else folder + "/"
    commits = []
    for record in output.split("\x1e")[1:]:
        head, _, changes = record.partition("\n")
        short, when, author, subject = (head.split("\x1f") + ["", "", "", ""])[:4]
        changed = []
        for line in changes.splitlines():
            parts = line.split("\t")
            path = parts[-1]
            if len(parts) < 2 or not path.startswith(prefix) or not path.endswith(".md"):
                continue
            changed.append((_CHANGES.get(parts[0][:1], "changed"), path[len(prefix) : -3]))
        commits.append({"short": short, "date": when, "author": author, "subject": subject, "changed": changed})
    return commits
