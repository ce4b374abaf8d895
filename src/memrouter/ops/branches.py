"""The memories other local branches and worktrees hold that this checkout lacks, their merge state, and the
memories changed differently on two branches (``memrouter branches``, ``status``, the janitor, the web UI).

``memrouter.repo.branches`` reads the repository with git plumbing; this
module turns its files into memory names and its places into words: where a
memory lives (``branch feat-x, worktree ../wt-x, unmerged, 2 commits ahead of
main``) and which versions of a memory diverged. A memory diverged when two
places each changed it since their merge base with this checkout, differently
(this checkout is one of the places when it changed it too).
"""

from __future__ import annotations

import os
from pathlib import Path

from memrouter.config.settings import Config
from memrouter.core.errors import InvalidInput
from memrouter.core.records import record
from memrouter.repo.branches import Change, Place, Survey, survey
from memrouter.repo.git import GitError, GitSession

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "HERE",
    "Divergence",
    "Version",
    "describe",
    "diverged",
    "divergences",
    "explain",
    "format_report",
    "memory_name",
    "report",
    "survey_of",
]

SUFFIX = ".md"
HERE = "this checkout"


def survey_of(config: Config) -> Survey:
    """The survey of the repository holding the memories root (``InvalidInput`` outside git)."""
    root = config.root
    try:
        top = GitSession(root if root.is_dir() else (config.project_dir or root)).toplevel.resolve()
    except GitError as exc:
        raise InvalidInput(f"other branches need the memories to be in a git repository: {exc}") from exc
    try:
        folder = root.resolve().relative_to(top).as_posix()
    except ValueError as exc:
        raise InvalidInput(f"the memories folder {root} is not inside the git repository {top}") from exc
    return survey(top, folder, suffix=SUFFIX)


def memory_name(path: str) -> str:
    """The memory name of a file path relative to the memories folder."""
    return path[: -len(SUFFIX)] if path.endswith(SUFFIX) else path


def describe(place: Place, found: Survey, *, uncommitted: bool = False) -> str:
    """Where a memory lives, in words: ``branch feat-x, worktree ../wt-x, unmerged, 2 commits ahead of main``."""
    parts = [f"branch {place.branch}" if place.branch is not None else f"detached HEAD {place.commit[:12]}"]
    if place.worktree is not None:
        shown = os.path.relpath(place.worktree, found.top)
        parts.append(f"worktree {shown}" + (" (gone)" if place.missing else ""))
    ours = found.branch or HERE
    if place.merged:
        parts.append(f"merged into {ours}")
    else:
        commits = "commit" if place.ahead == 1 else "commits"
        parts.append(f"unmerged, {place.ahead} {commits} ahead of {ours}")
    if uncommitted:
        parts.append("uncommitted")
    return ", ".join(parts)


@record
class Version:
    """One version of a diverged memory: where it is and its text."""

    where: str
    blob: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "blob": self.blob, "text": self.text}


@record
class Divergence:
    """A memory changed differently on two or more places since their merge base."""

    name: str
    versions: tuple[Version, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "versions": [{"where": v.where, "blob": v.blob, "text": v.text} for v in self.versions],
        }


def divergences(found: Survey, ours: Path | None = None) -> list[Divergence]:
    """The memories two places changed differently (each version once, this checkout's first); ``ours``: the
    memories folder, to read this checkout's version."""
    changed: dict[str, list[tuple[Place, Change]]] = {}
    for place in found.places:
        for change in place.changes:
            if change.change != "removed" and change.data is not None:
                changed.setdefault(change.path, []).append((place, change))
    result = []
    for path, sides in sorted(changed.items()):
        versions: dict[str, Version] = {}
        mine = found.ours.get(path)
        if mine is not None and ours is not None and any(change.diverged for _, change in sides):
            text = _read(ours / path)
            if text is not None:
                versions[mine] = Version(HERE, mine, text)
        for place, change in sides:
            if change.blob is not None and change.blob not in versions and change.data is not None:
                versions[change.blob] = Version(place.label, change.blob, change.data.decode("utf-8", "replace"))
        if len(versions) >= 2:
            result.append(Divergence(memory_name(path), tuple(versions.values())))
    return result


def diverged(config: Config) -> list[Divergence]:
    """The memories changed differently on two places (``status``, the janitor, the web UI); none outside git
    or when the repository cannot be read (git missing or failing: ``memrouter branches`` says why)."""
    try:
        return divergences(survey_of(config), config.root)
    except (InvalidInput, GitError):
        return []


def explain(divergence: Divergence) -> str:
    """One line for a diverged memory: where its versions are."""
    return f"{divergence.name} changed differently on {' and '.join(v.where for v in divergence.versions)}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def report(config: Config) -> dict[str, Any]:
    """``memrouter branches``: per other local branch and worktree, its merge state and the memories it has
    that this checkout lacks (new, changed, removed; the uncommitted ones named), then the divergences."""
    found = survey_of(config)
    places = []
    for place in found.places:
        entry: dict[str, Any] = {
            "branch": place.branch,
            "commit": place.commit,
            "worktree": str(place.worktree) if place.worktree is not None else None,
            "worktree_missing": place.missing,
            "merged": place.merged,
            "ahead": place.ahead,
            "behind": place.behind,
            "where": describe(place, found),
        }
        for kind in ("new", "changed", "removed"):
            entry[kind] = [memory_name(c.path) for c in place.changes if c.change == kind]
        entry["uncommitted"] = [memory_name(c.path) for c in place.changes if c.uncommitted]
        places.append(entry)
    return {
        "branch": found.branch,
        "head": found.head,
        "places": places,
        "diverged": [d.to_dict() for d in divergences(found, config.root)],
        "notes": list(found.notes),
    }


def format_report(data: dict[str, Any]) -> str:
    """The text form of ``report``."""
    lines = [f"on {data['branch'] or HERE}" + (f" ({data['head'][:12]})" if data["head"] else " (no commit yet)")]
    if not data["places"]:
        lines.append("no other local branch or worktree")
    for place in data["places"]:
        lines.append(f"{place['where']}")
        uncommitted = set(place["uncommitted"])
        for kind in ("new", "changed", "removed"):
            if place[kind]:
                names = [name + (" (uncommitted)" if name in uncommitted else "") for name in place[kind]]
                lines.append(f"  {kind}: {', '.join(names)}")
        if not any(place[kind] for kind in ("new", "changed", "removed")):
            lines.append("  nothing this checkout lacks")
    for diverged in data["diverged"]:
        lines.append(f"diverged: {diverged['name']} ({', '.join(v['where'] for v in diverged['versions'])})")
    lines += [f"note: {note}" for note in data["notes"]]
    return "\n".join(lines)
