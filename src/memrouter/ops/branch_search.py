"""Searching the memories only other local branches and worktrees hold (``search --branches local``).

The versions other places hold that this checkout lacks (new and changed
memories, ``memrouter.ops.branches``; never one whose content this checkout
holds under any name: git's blob id is a content hash) are written, one file
per version, to ``<index_dir>/branches/memories`` as ``<name>~<blob>.md``,
beside a copy of this checkout's memories, and indexed there like any
memories folder (its vectors come from the repository's shared vector file,
so a text embedded once is not embedded again). A search runs the same
pipeline over that index, where both are scored with the same statistics
(the other places' versions alone would make a small index whose scores do
not compare with the checkout's), lowers the other places' hits' relevance
and score by ``[branches] share`` and places them, by relevance, among the
checkout's own hits, which keep their order; each such hit's ``why`` says where the memory lives.

The repository is surveyed again only when something changed: a branch or a
worktree's ``HEAD`` or index moved, or a file in this checkout's or another
worktree's memories folder (``memrouter.repo.branches.fingerprint``,
``os.stat`` only), checked at most every ``[search] refresh_interval`` seconds. The last survey is kept
in ``<index_dir>/branches/state.json``, so a new process whose repository did
not change runs one git process (to find the common git folder), not a survey.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from memrouter.config.sections import BranchesConfig
from memrouter.config.settings import Config
from memrouter.core.model import Hit, Match
from memrouter.core.records import record, replace
from memrouter.ops.branches import describe, memory_name, survey_of
from memrouter.repo.branches import Survey, fingerprint
from memrouter.repo.common import shared_folder

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BRANCH", "REMOVED", "BranchMemories", "Entry", "mark_removed", "merge"]

BRANCH = "branch"  # the retriever name of the note in a branch hit's ``why``
REMOVED = "removed"  # the note on a hit of this checkout that another place removed
FOLDER = "branches"
NEVER = 1e9  # the branch index's own rescans: this module refreshes it when it rewrites the folder


@record
class Entry:
    """One version another place holds: its memory name, where it lives (words) and its file there."""

    name: str
    where: str
    path: str


class Closable(Protocol):
    """What this module needs of the branch folder's workspace: a way to let go of it."""

    def close(self) -> None: ...


W = TypeVar("W", bound=Closable)


class BranchMemories(Generic[W]):
    """The other places' memories of one workspace, kept in step with the repository (see the module docstring)."""

    def __init__(self, config: Config, open_index: Callable[[Config], W]) -> None:
        """``open_index(config)``: a workspace over the branch folder (made on first need)."""
        self.config = config
        self.open_index = open_index
        # The folder changed since the branch index last read it: the next search refreshes it first.
        self.changed = False
        folder = config.index_dir / FOLDER
        self.root = folder / "memories"
        self.state = folder / "state.json"
        search = replace(config.search, refresh_interval=NEVER, rerank=False)
        index = replace(config.index, url=None)
        self.settings = replace(
            config, root=self.root, index_dir=folder / "index", backends={}, index=index, sources=(), search=search,
            branches=BranchesConfig(),
        )  # fmt: skip
        self.entries: dict[str, Entry] = {}  # file name in the branch folder (without .md) -> where it comes from
        self.removed: dict[str, str] = {}  # a memory of this checkout another place removed -> where (words)
        self.notes: tuple[str, ...] = ()
        self._workspace: W | None = None
        self._common: Path | None = None
        self._folders: list[Path] = []
        self._mark: tuple[object, ...] | None = None
        self._checked = float("-inf")
        self._load()

    def workspace(self) -> W | None:
        """The index of the other places' memories, in step with the repository; None when they hold none."""
        self.follow()
        if not self.entries:
            return None
        if self._workspace is None:
            self._workspace = self.open_index(self.settings)
            self.changed = False  # a new workspace reads the whole folder on its first search
        return self._workspace

    def follow(self) -> None:
        """Survey the repository again if it changed since the last survey (at most every refresh interval)."""
        interval = self.config.search.refresh_interval
        now = time.monotonic()
        if interval > 0 and now - self._checked < interval:
            return
        self._checked = now
        if self._common is None:
            shared = shared_folder(self.config.project_dir or self.config.root)
            self._common = shared.parent if shared is not None else None
        if self._mark is not None and fingerprint(self._common, self._folders) == self._mark:
            return
        found = survey_of(self.config)
        # this checkout's folder too: what it holds decides what the others lack
        self._folders = [self.config.root] + [
            place.worktree / self._relative(found) for place in found.places if place.worktree and not place.missing
        ]
        self._mark = fingerprint(self._common, self._folders)
        self._write(found)
        self._save()

    def _relative(self, found: Survey) -> Path:
        return self.config.root.resolve().relative_to(found.top)

    def _write(self, found: Survey) -> None:
        """Write the versions the other places hold into the branch folder; remove the ones gone."""
        mine = set(found.ours.values())
        wanted: dict[str, tuple[bytes, list[str], str]] = {}
        removed: dict[str, list[str]] = {}
        for place in found.places:
            for change in place.changes:
                if change.change == "removed":
                    where = describe(place, found, uncommitted=change.uncommitted)
                    removed.setdefault(memory_name(change.path), []).append(where)
                if change.data is None or change.blob is None or change.blob in mine:
                    continue  # removed, unreadable, or content this checkout holds: its own copy wins
                key = f"{memory_name(change.path)}~{change.blob[:12]}"
                where = describe(place, found, uncommitted=change.uncommitted)
                if place.worktree is not None and not place.missing:
                    path = str(place.worktree / self._relative(found) / change.path)
                else:
                    path = f"{place.label}:{(self._relative(found) / change.path).as_posix()}"
                if key in wanted:
                    wanted[key][1].append(where)
                else:
                    wanted[key] = (change.data, [where], path)
        files = {key: data for key, (data, _, _) in wanted.items()}
        if wanted:  # this checkout's memories beside them, so both are scored with the same statistics
            for path in found.ours:
                try:
                    files[memory_name(path)] = (self.config.root / path).read_bytes()
                except OSError:
                    continue  # gone since the survey: the next one sees it
        self.root.mkdir(parents=True, exist_ok=True)
        present = {str(path.relative_to(self.root))[:-3] for path in self.root.rglob("*.md")}
        for key in present - set(files):
            (self.root / f"{key}.md").unlink(missing_ok=True)
        changed = bool(present - set(files))
        for key, data in files.items():
            target = self.root / f"{key}.md"
            if key in present and target.read_bytes() == data:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            temp.write_bytes(data)
            os.replace(temp, target)
            changed = True
        self.entries = {key: Entry(memory_name(key.rsplit("~", 1)[0] + ".md"), "; ".join(where), path)
                        for key, (_, where, path) in wanted.items()}  # fmt: skip
        self.removed = {name: "; ".join(places) for name, places in removed.items()}
        self.notes = found.notes
        self.changed = self.changed or changed

    def _save(self) -> None:
        data = {
            "mark": _digest(self._mark),
            "folders": [str(folder) for folder in self._folders],
            "entries": {key: [e.name, e.where, e.path] for key, e in self.entries.items()},
            "removed": self.removed,
            "notes": list(self.notes),
        }
        temp = self.state.with_name(f".{self.state.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temp, self.state)

    def _load(self) -> None:
        """The last survey, when the repository has not changed since (checked on the first ``follow``)."""
        try:
            data = json.loads(self.state.read_text(encoding="utf-8"))
            folders = [Path(folder) for folder in data["folders"]]
            entries = {key: Entry(*value) for key, value in data["entries"].items()}
            removed = {str(name): str(where) for name, where in data.get("removed", {}).items()}
            mark, notes = str(data["mark"]), tuple(data["notes"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        if entries and not self.root.is_dir():
            return  # the folder went: the next search surveys and writes it again
        shared = shared_folder(self.config.project_dir or self.config.root)
        self._common = shared.parent if shared is not None else None
        now = fingerprint(self._common, folders)
        if _digest(now) == mark:  # just looked: the first search need not look again
            self._folders, self._mark, self.entries, self.notes = folders, now, entries, notes
            self.removed = removed
            self._checked = time.monotonic()

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None


def _digest(mark: object) -> str:
    return hashlib.sha256(repr(mark).encode("utf-8", "surrogateescape")).hexdigest()


def _key(hit: Hit) -> float:
    """What places a hit: its relevance (the same meaning in every mode), else its score."""
    return hit.relevance if hit.relevance is not None else hit.score


def mark_removed(hits: list[Hit], removed: dict[str, str]) -> list[Hit]:
    """``hits`` with a note on each of this checkout's memories another place removed (not lowered: it is
    here, and that place may be wrong or not merged)."""
    if not removed:
        return hits
    return [
        replace(hit, why=(*hit.why, Match(REMOVED, 0, 0.0, removed[hit.name]))) if hit.name in removed else hit
        for hit in hits
    ]


def merge(
    own: list[Hit], both: list[Hit], entries: dict[str, Entry], share: float, limit: int, weak_below: float = 0.0
) -> list[Hit]:
    """The checkout's hits in their order, with the other places' hits placed among them.

    ``both`` is one search of the branch index, where this checkout's memories and the other places' versions
    are scored together. Each other place's hit, its relevance and score lowered by ``share`` and marked with
    where it lives, goes before the first of the checkout's hits that was less relevant there (a checkout's hit
    that search did not reach counts as the least relevant it reached). Relevance, not the score, places them:
    its scale is the same in every mode, where a fused score's is not (``memrouter.ops.relevance``). Never a
    copy of content the checkout's hits hold. A hit lowered below ``weak_below`` (the relevance floor) is weak.
    """
    beside = {hit.name: _key(hit) for hit in both if hit.name not in entries}
    floor = min((_key(hit) for hit in both), default=0.0)  # the most a hit the search did not reach had
    held = {hit.hash for hit in own}
    lowered = []
    for hit in both:
        entry = entries.get(hit.name)
        if entry is None or hit.hash in held:
            continue
        held.add(hit.hash)
        note = Match(BRANCH, 0, share, entry.where)
        relevance = None if hit.relevance is None else hit.relevance * (1 - share)
        weak = hit.weak or (relevance is not None and relevance < weak_below)
        lowered.append(replace(
            hit, name=entry.name, path=entry.path, score=hit.score * (1 - share), relevance=relevance, weak=weak,
            why=(*hit.why, note),
        ))  # fmt: skip
    lowered.sort(key=lambda hit: -_key(hit))
    merged: list[Hit] = []
    at = 0
    for hit in own:
        mark = beside.get(hit.name, floor)
        while at < len(lowered) and _key(lowered[at]) > mark:
            merged.append(lowered[at])
            at += 1
        merged.append(hit)
    merged += lowered[at:]
    return merged[:limit]
