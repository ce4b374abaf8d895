"""Where the worktrees of one repository keep what they share (a folder in the common git directory), and
where a checkout is (its branch and worktree).

Every worktree of a repository has its own git directory, but all of them
share one common directory (``git rev-parse --git-common-dir``: the main
checkout's ``.git``). A file under ``<common dir>/memrouter/`` is therefore
seen by every worktree, is never tracked by git, and goes away with the
repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memrouter.core.errors import InvalidInput
from memrouter.repo.git import GitError
from memrouter.repo.tree import collect, start

__all__ = ["SHARED_FOLDER", "Place", "checkout_place", "checkout_place_of", "shared_folder"]

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


@dataclass(frozen=True, slots=True)
class Place:
    """Where a checkout is: its branch (None when ``HEAD`` is detached) and the top folder of its worktree."""

    branch: str | None
    worktree: Path


def checkout_place(folder: Path) -> Place | None:
    """The branch and worktree of the git checkout holding ``folder``; None outside a git work tree."""
    try:
        top = start(folder, "rev-parse", "--path-format=absolute", "--show-toplevel")
        found = collect(top, "rev-parse", timeout=10.0).decode("utf-8", "replace").strip()
        head = start(folder, "symbolic-ref", "--quiet", "--short", "HEAD")  # a branch with no commit yet too
        branch = collect(head, "symbolic-ref", ok=(0, 1), timeout=10.0).decode("utf-8", "replace").strip()
    except GitError:
        return None
    return Place(branch or None, Path(found)) if found else None


def checkout_place_of(worktree: str | None, default: Path) -> Place | None:
    """Where the checkout at ``worktree`` is (its branch and worktree), else that of ``default`` (None outside git).
    A ``worktree`` that is not a folder in a git work tree is refused."""
    if worktree is None:
        return checkout_place(default)
    if not isinstance(worktree, str) or not worktree.strip() or "\0" in worktree:
        raise InvalidInput("worktree must be the path of a folder of your git checkout")
    folder = Path(worktree).expanduser()
    place = checkout_place(folder) if folder.is_dir() else None
    if place is None:
        raise InvalidInput(f"worktree {worktree!r} is not a folder in a git work tree")
    return place
