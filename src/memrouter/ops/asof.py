"""Searching the memories as they were at a past date or commit, from git, never the work tree.

The memories folder's files at that commit are read with one ``git cat-file
--batch`` into ``<index_dir>/as-of/<commit>/memories`` (written to a
temporary folder and renamed, so a half-made snapshot is never used), and
indexed there like any project. Snapshots and their indexes are kept per
commit, so later searches at the same commit are warm; ``as_of`` names a
commit directly or a date (the last commit that day or before), and validity
in front matter is judged at that commit's time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from memrouter.config.settings import Config
from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.records import replace
from memrouter.index.sqlite.recordtime import git_head
from memrouter.ops.history import DATE, resolve_revision
from memrouter.repo.git import GitSession

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.index.sqlite.activity import Lent

__all__ = ["MAX_SNAPSHOTS", "Closable", "PastIndexes"]

MAX_SNAPSHOTS = 8


class Closable(Protocol):
    """What this module needs of a past commit's workspace: a way to let go of it."""

    def close(self) -> None: ...


W = TypeVar("W", bound=Closable)


class PastIndexes(Generic[W]):
    """The workspaces of past commits one workspace has searched (at most ``MAX_SNAPSHOTS`` kept on disk)."""

    def __init__(
        self,
        config: Config,
        lend: Callable[[float], tuple[str | None, dict[str, list[int]]]],
        open_past: Callable[[Config, Callable[[], float], Lent], W],
    ) -> None:
        """``lend(moment)``: the live workspace's commit times up to ``moment``, for time words as of then;
        ``open_past(config, clock, record_times)``: a workspace over a snapshot, its clock at the commit's time."""
        self.config = config
        self.lend = lend
        self.open_past = open_past
        self._open: dict[str, W] = {}
        self._resolved: dict[tuple[str, str | None], str] = {}

    def at(self, as_of: str) -> W:
        """The workspace over the memories as committed at ``as_of`` (a date or a commit)."""
        if self.config.project_dir is None:
            raise InvalidInput("searching as of a date or commit needs the memories to be in a git project")
        session = GitSession(self.config.project_dir)
        # A date names the same commit until HEAD moves: resolve it once per HEAD (git_head reads files).
        # Other revisions (a branch may move while HEAD stays) are resolved every time.
        key = (as_of, git_head(self.config.project_dir) if DATE.fullmatch(as_of) else None)
        commit = self._resolved.get(key) if key[1] is not None else None
        if commit is None:
            commit = resolve_revision(session, as_of)
            if key[1] is not None:
                self._resolved = {k: v for k, v in self._resolved.items() if k[1] == key[1]} | {key: commit}
        past = self._open.get(commit)
        if past is None:
            when = float(session.run("show", "-s", "--format=%ct", commit).stdout.strip() or 0)
            folder = self.config.index_dir / "as-of" / commit
            root = self._snapshot(session, commit, folder)
            # a past snapshot is searched locally: it must never overwrite the project's rows in a shared database
            index = replace(self.config.index, url=None)
            settings = replace(self.config, root=root, index_dir=folder / "index", backends={}, index=index)
            past = self.open_past(settings, lambda: when, lambda: self.lend(when))  # validity judged then
            self._open[commit] = past
        return past

    def _snapshot(self, session: GitSession, commit: str, folder: Path) -> Path:
        """The memories folder as committed at ``commit``, materialised once under ``folder``."""
        root = folder / "memories"
        if root.is_dir():
            return root
        top = session.toplevel.resolve()
        try:
            prefix = self.config.root.resolve().relative_to(top).as_posix()
        except ValueError as exc:
            raise InvalidInput(f"the memories folder {self.config.root} is not inside the git repository") from exc
        listed = session.run("ls-tree", "-r", "-z", "--format=%(objectname) %(path)", commit, "--", prefix).stdout
        entries = [line.split(" ", 1) for line in listed.split("\0") if line.endswith(".md") and " " in line]
        if not entries:
            raise NotFound(f"the memories folder {prefix!r} holds no memory at {commit[:12]}")
        self._prune()
        building = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(building, ignore_errors=True)
        base = building / "memories"
        blobs = _read_blobs(top, [sha for sha, _ in entries])
        for (_sha, path), data in zip(entries, blobs, strict=True):
            relative = Path(path).relative_to(prefix) if prefix != "." else Path(path)
            target = (base / relative).resolve()
            if not target.is_relative_to(base.resolve()):
                continue  # never write outside the snapshot
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        base.mkdir(parents=True, exist_ok=True)
        try:
            building.rename(folder)
        except OSError:  # another process made it first
            shutil.rmtree(building, ignore_errors=True)
        return root

    def _prune(self) -> None:
        """Keep the newest snapshots only: each is a copy of the memories folder."""
        folder = self.config.index_dir / "as-of"
        if not folder.is_dir():
            return
        kept = sorted((p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")),
                      key=lambda p: p.stat().st_mtime, reverse=True)  # fmt: skip
        for old in kept[MAX_SNAPSHOTS - 1 :]:
            if old.name not in self._open:
                shutil.rmtree(old, ignore_errors=True)

    def close(self) -> None:
        for past in self._open.values():
            past.close()
        self._open.clear()


def _read_blobs(top: Path, shas: list[str]) -> list[bytes]:
    """The contents of ``shas``, read by one ``git cat-file --batch`` process."""
    process = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=top, input="".join(f"{sha}\n" for sha in shas).encode(),
        capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    out = process.stdout
    blobs: list[bytes] = []
    position = 0
    for _ in shas:
        header_end = out.index(b"\n", position)
        size = int(out[position:header_end].split()[2])
        start = header_end + 1
        blobs.append(out[start : start + size])
        position = start + size + 1
    return blobs
