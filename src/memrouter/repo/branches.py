"""The other local branches and worktrees of a repository, and the files of one folder each holds that this checkout lacks.

Everything is read with git plumbing, never a checkout: the worktrees with
``git worktree list --porcelain``, the branches with ``git for-each-ref
refs/heads``, each commit's files with ``git ls-tree -r``, their bytes with
one ``git cat-file --batch``, the merge state with ``git rev-list
--left-right --count`` and ``git merge-base``. A worktree's uncommitted files
are read from its folder (``git status`` there says which).

A file another place holds is compared three ways: with this checkout's file
(its work tree: ``HEAD`` and the uncommitted changes), and with the two
commits' merge base, so that only what the other place changed counts:

- ``new``: the other place has it, this checkout has no file of that path;
- ``changed``: both have it, the other place changed it since the merge base
  and the two differ (``diverged`` when this checkout changed it too);
- ``removed``: the other place deleted it since the merge base.

A file this checkout changed and the other place did not is not listed: the
other place only holds an older version. Paths are relative to ``folder``,
POSIX text, as git prints them with ``core.quotepath=off``.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from memrouter.repo.tree import blob_id, collect, read_blobs, start

__all__ = [
    "Change",
    "Place",
    "Survey",
    "Worktree",
    "fingerprint",
    "parse_worktrees",
    "survey",
]

NO_COMMIT = "0" * 40


@dataclass(frozen=True, slots=True)
class Worktree:
    """One entry of ``git worktree list --porcelain``."""

    path: Path
    head: str | None  # None: no commit yet (an unborn branch)
    branch: str | None  # the short branch name; None when detached (or bare)
    detached: bool = False
    bare: bool = False
    missing: bool = False  # git marks it prunable: its folder is gone


@dataclass(frozen=True, slots=True)
class Change:
    """One file a place holds that this checkout lacks: ``new``, ``changed`` or ``removed``."""

    path: str
    change: str
    blob: str | None  # the place's version (None when removed)
    data: bytes | None  # its bytes (None when removed)
    ours: str | None  # this checkout's version
    base: str | None  # the merge base's version
    uncommitted: bool = False  # read from the worktree's folder, not from a commit

    @property
    def diverged(self) -> bool:
        """Both sides changed the file since their merge base, differently."""
        return self.change == "changed" and self.ours != self.base and self.base is not None


@dataclass(frozen=True, slots=True)
class Place:
    """A local branch (checked out in a worktree or not), or a worktree on a detached ``HEAD``."""

    branch: str | None
    commit: str
    worktree: Path | None = None
    missing: bool = False  # its worktree's folder was removed by hand
    ahead: int = 0  # commits it has that this checkout's HEAD lacks
    behind: int = 0
    base: str | None = None  # the merge base with this checkout's HEAD (None: no common commit)
    changes: tuple[Change, ...] = ()

    @property
    def merged(self) -> bool:
        """Its commits are all in this checkout's HEAD (its uncommitted files aside)."""
        return self.ahead == 0

    @property
    def label(self) -> str:
        return self.branch if self.branch is not None else f"detached {self.commit[:12]}"


@dataclass(frozen=True, slots=True)
class Survey:
    """What the other places hold: ``places`` in branch order; ``notes`` say what could not be read."""

    top: Path
    branch: str | None  # this checkout's branch (None when detached or without commits)
    head: str | None
    places: tuple[Place, ...] = ()
    ours: dict[str, str] = field(default_factory=dict)  # this checkout's files: path -> blob id
    notes: tuple[str, ...] = ()


def parse_worktrees(output: bytes) -> list[Worktree]:
    """The entries of ``git worktree list --porcelain -z``."""
    found: list[Worktree] = []
    fields: dict[str, str] = {}
    for item in [*output.split(b"\0"), b""]:
        line = item.decode("utf-8", "surrogateescape")
        if line:
            key, _, value = line.partition(" ")
            fields[key] = value
            continue
        if "worktree" in fields:
            branch = fields.get("branch")
            head = fields.get("HEAD")
            found.append(
                Worktree(
                    Path(fields["worktree"]),
                    None if head in (None, NO_COMMIT) else head,
                    branch.removeprefix("refs/heads/") if branch else None,
                    detached="detached" in fields,
                    bare="bare" in fields,
                    missing="prunable" in fields,
                )
            )
        fields = {}
    return found


def _tree(top: Path, commit: str, folder: str) -> subprocess.Popen[bytes]:
    return start(top, "ls-tree", "-r", "-z", "--full-tree", commit, "--", folder or ".")


def _parse_tree(output: bytes, folder: str, suffix: str) -> dict[str, str]:
    """path (relative to ``folder``) -> blob id, for the ``suffix`` files outside dot folders."""
    found: dict[str, str] = {}
    cut = len(folder) + 1 if folder else 0
    for entry in output.split(b"\0"):
        head, tab, raw = entry.partition(b"\t")
        parts = head.split(b" ")
        if not tab or len(parts) != 3 or parts[1] != b"blob":
            continue
        path = raw.decode("utf-8", "surrogateescape")[cut:]
        if _wanted(path, suffix):
            found[path] = parts[2].decode("ascii")
    return found


def _wanted(path: str, suffix: str) -> bool:
    return path.endswith(suffix) and not any(part.startswith(".") for part in path.split("/"))


def _status(top: Path, folder: str) -> subprocess.Popen[bytes]:
    return start(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", folder or ".")


def _overlay(files: dict[str, str], status: bytes, top: Path, folder: str, suffix: str) -> dict[str, bytes | None]:
    """Apply the uncommitted changes git ``status`` lists to ``files``; path -> bytes (None: deleted)."""
    read: dict[str, bytes | None] = {}
    cut = len(folder) + 1 if folder else 0
    for entry in status.split(b"\0"):
        if len(entry) < 4:
            continue
        full = entry[3:].decode("utf-8", "surrogateescape")
        path = full[cut:]
        if not _wanted(path, suffix):
            continue
        try:
            data: bytes | None = (top / full).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            data = None
        except OSError:
            continue  # unreadable now: what git committed stands
        read[path] = data
        if data is None:
            files.pop(path, None)
        else:
            files[path] = blob_id(data)
    return read


def survey(top: Path, folder: str, *, suffix: str = ".md") -> Survey:
    """The other local branches and worktrees of the repository holding ``top`` (this checkout's top folder),
    each with the files under ``folder`` (relative to the repository's top) it holds that this checkout lacks."""
    folder = folder.strip("/") if folder not in ("", ".") else ""
    top = top.resolve()
    worktrees = start(top, "worktree", "list", "--porcelain", "-z")
    refs = start(top, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads")
    head = start(top, "rev-parse", "--verify", "-q", "HEAD")
    ours_status = _status(top, folder)
    listed = parse_worktrees(collect(worktrees, "worktree list"))
    branches: dict[str, str] = {}
    for line in collect(refs, "for-each-ref").decode("utf-8", "surrogateescape").splitlines():
        commit, _, ref = line.partition(" ")
        branches[ref.removeprefix("refs/heads/")] = commit
    our_head = collect(head, "rev-parse", ok=(0, 1)).decode("ascii").strip() or None
    status = collect(ours_status, "status")
    here = next((tree for tree in listed if _same(tree.path, top)), None)
    our_branch = here.branch if here is not None and not here.detached else None
    notes: list[str] = []
    if our_head is None:
        notes.append("this checkout has no commit yet: other branches are compared with nothing")
    ours = _parse_tree(collect(_tree(top, our_head, folder), "ls-tree"), folder, suffix) if our_head else {}
    _overlay(ours, status, top, folder, suffix)

    # The places: every local branch but this checkout's, then the detached worktrees.
    by_branch = {tree.branch: tree for tree in listed if tree.branch is not None and not tree.detached}
    wanted: list[tuple[str | None, str, Worktree | None]] = []
    for name, commit in sorted(branches.items()):
        tree = by_branch.get(name)
        if name == our_branch or (tree is not None and _same(tree.path, top)):
            continue
        wanted.append((name, commit, tree))
    for tree in listed:
        if tree.detached and tree.head is not None and not _same(tree.path, top):
            wanted.append((None, tree.head, tree))
    for tree in listed:
        if tree.missing:
            notes.append(
                f"worktree {tree.path} is gone (removed without `git worktree remove`); its branch's commits are "
                "still read; `git worktree prune` forgets it"
            )

    # Start every git process first, then read them: the work of one overlaps the others'.
    counts, bases, trees, statuses = {}, {}, {}, {}
    for branch, commit, tree in wanted:
        key = (branch, commit)
        if our_head is not None:
            counts[key] = start(top, "rev-list", "--left-right", "--count", f"{our_head}...{commit}")
            bases[key] = start(top, "merge-base", our_head, commit)
        if commit not in trees:
            trees[commit] = _tree(top, commit, folder)
        if tree is not None and not tree.missing and tree.path.is_dir():
            statuses[key] = _status(tree.path, folder)
    base_of: dict[tuple[str | None, str], str | None] = {}
    for key, process in bases.items():
        base_of[key] = collect(process, "merge-base", ok=(0, 1)).decode("ascii").strip() or None
    for base in {base for base in base_of.values() if base is not None} - set(trees):
        trees[base] = _tree(top, base, folder)
    files = {commit: _parse_tree(collect(process, "ls-tree"), folder, suffix) for commit, process in trees.items()}

    places: list[tuple[str | None, str, Worktree | None, int, int, str | None, dict[str, str], dict[str, bytes | None]]]
    places = []
    for branch, commit, tree in wanted:
        key = (branch, commit)
        behind, ahead = 0, 0
        if key in counts:
            left, _, right = collect(counts[key], "rev-list").decode("ascii").strip().partition("\t")
            behind, ahead = int(left or 0), int(right or 0)
        theirs = dict(files[commit])
        read: dict[str, bytes | None] = {}
        if key in statuses and tree is not None:
            read = _overlay(theirs, collect(statuses[key], "status"), tree.path, folder, suffix)
        places.append((branch, commit, tree, ahead, behind, base_of.get(key), theirs, read))

    # The bytes of every version a place holds that this checkout lacks, in one cat-file.
    changes: list[list[tuple[str, str, str | None, str | None, bool]]] = []
    blobs: set[str] = set()
    for *_, merge_base, theirs, read in places:
        base_files = files.get(merge_base, {}) if merge_base is not None else {}
        found: list[tuple[str, str, str | None, str | None, bool]] = []
        for path in sorted(set(theirs) | set(base_files)):
            mine, old, new = ours.get(path), base_files.get(path), theirs.get(path)
            if new == old or new == mine:
                continue  # the other place did not change it, or holds what this checkout holds
            if new is None:
                if mine is not None:
                    found.append((path, "removed", old, mine, path in read))
                continue
            found.append((path, "new" if mine is None else "changed", old, mine, path in read))
            if path not in read:
                blobs.add(new)
        changes.append(found)
    data = read_blobs(top, sorted(blobs)) if blobs else {}

    result: list[Place] = []
    for (branch, commit, tree, ahead, behind, joined, theirs, read), found_changes in zip(places, changes, strict=True):
        made = []
        for path, kind, old, mine, uncommitted in found_changes:
            blob = theirs.get(path)
            if kind == "removed":
                content = None
            elif uncommitted:
                content = read.get(path)
            else:
                got = data.get(blob or "")
                content = got[1] if got is not None else None
            made.append(Change(path, kind, blob, content, mine, old, uncommitted))
        worktree = tree.path if tree is not None else None
        missing = tree is not None and (tree.missing or not tree.path.is_dir())
        result.append(Place(branch, commit, worktree, missing, ahead, behind, joined, tuple(made)))
    return Survey(top, our_branch, our_head, tuple(result), ours, tuple(notes))


def _same(one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return one.resolve() == other.resolve()


def fingerprint(common: Path | None, folders: list[Path]) -> tuple[object, ...]:
    """A cheap token that changes when a branch, a worktree's ``HEAD`` or index, or a file under ``folders``
    (skipping dot entries) changes: ``os.stat`` only, no git process. A survey made under the same token
    still holds."""
    marks: list[object] = []
    if common is not None:
        marks += [_stat(common / name) for name in ("packed-refs", "HEAD", "index")]
        marks += _files(str(common / "refs" / "heads")) + _files(str(common / "reftable"))
        try:
            linked = sorted(os.scandir(common / "worktrees"), key=lambda entry: entry.name)
        except OSError:
            linked = []
        marks += [(entry.name, _stat(Path(entry.path) / "HEAD"), _stat(Path(entry.path) / "index")) for entry in linked]
    for folder in folders:
        marks += _files(str(folder))
    return tuple(marks)


def _files(folder: str) -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of every file under ``folder``, skipping dot entries; scandir's own stat calls."""
    found: list[tuple[str, int, int]] = []
    stack = [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.name[0] == ".":
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
                stat = entry.stat()
            except OSError:
                continue
            found.append((entry.path, stat.st_mtime_ns, stat.st_size))
    return found


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size
