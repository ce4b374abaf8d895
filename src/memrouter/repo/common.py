"""Where the worktrees of one repository keep what they share: a folder in the common git directory.

Every worktree of a repository has its own git directory, but all of them
share one common directory (``git rev-parse --git-common-dir``: the main
checkout's ``.git``). A file under ``<common dir>/memrouter/`` is therefore
seen by every worktree, is never tracked by git, and goes away with the
repository.
"""

from __future__ import annotations

from pathlib import Path

from memrouter.repo.git import GitError
from memrouter.repo.tree import collect, start

__all__ = ["SHARED_FOLDER", "shared_folder"]

SHARED_FOLDER = "memrouter"


def shared_folder(top: Path) -> Path | None:
    """``<common git dir>/memrouter`` of the repository holding ``top``; None outside a git repository."""
    try:
        output = collect(
            start(top, "rev-parse", "--path-format=absolute", "--git-common-dir"), "rev-parse", timeout=10.0
        )
    except GitError:
        return None
    found = output.decode("utf-8", "replace").strip()
    return Path(found) / SHARED_FOLDER if found else None
