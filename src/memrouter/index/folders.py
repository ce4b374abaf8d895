"""Folders are context: a memory borrows its folder overview's words.

A store that holds many projects or topics keeps one folder each, and the
same memory names recur in every folder (``project_overview``,
``suggested_commands``, ``style_and_conventions``). A question names the
project by its domain ("in the karaoke app, which script starts the
worker?"): the domain is written in the folder's overview, the answer in a
sibling that never says "karaoke".

So a memory inside a folder that has an overview (a memory named one of
``OVERVIEW_NAMES``; the nearest such folder up the path) borrows from it:

* in lexical scoring, for each query term, the larger of its own
  contribution and ``share`` of the term's contribution to the overview
  (never both), so the overview still wins questions about the domain alone
  and the sibling that holds the rest of the question wins the rest;
* in dense search, the larger of its own similarity to the query and
  ``share`` of the overview's, so a folder whose overview is far from the
  question does not lend, and siblings keep their own order.

Top-level memories borrow nothing: the store's own overview describes every
memory alike.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (lexical search never imports it)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = ["FOLDER_SHARE", "OVERVIEW_NAMES", "FolderContext"]

# The memory names (without folder, any case) that describe their folder.
OVERVIEW_NAMES = frozenset({"project_overview", "project-overview", "overview", "readme", "index", "about"})
# How much of its overview a memory borrows: fitted on half of benchmarks/golden/multi-project.json
# (the projects split in two), best on each half alike (benchmarks/fit_folders.py).
FOLDER_SHARE = 0.9


class FolderContext:
    """Which memories borrow from which overview, for one index generation."""

    def __init__(self, names: Iterable[tuple[int, str]], share: float = FOLDER_SHARE) -> None:
        self.share = share
        overviews: dict[str, int] = {}
        folders: list[tuple[int, str]] = []
        for memory_id, name in names:
            folder, _, base = name.rpartition("/")
            if not folder:
                continue
            if base.lower() in OVERVIEW_NAMES:
                overviews.setdefault(folder, memory_id)
            folders.append((memory_id, folder))
        # overview id -> the ids that borrow from it, and each borrowing id -> its overview
        self.members: dict[int, list[int]] = {}
        self.owner: dict[int, int] = {}
        if not overviews or share <= 0:
            return
        for memory_id, folder in folders:
            owner = _nearest(folder, overviews)
            if owner == memory_id:  # an overview borrows from the folder above its own
                owner = _nearest(folder.rpartition("/")[0], overviews)
            if owner is not None:
                self.members.setdefault(owner, []).append(memory_id)
                self.owner[memory_id] = owner

    def __bool__(self) -> bool:
        return bool(self.members)

    def lend(self, contributions: dict[int, float]) -> dict[int, float]:
        """``contributions`` (memory id -> a term's score) with each overview's share lent to its folder."""
        lent = [(owner, contributions[owner]) for owner in self.members if owner in contributions]
        if not lent:
            return contributions
        result = dict(contributions)
        for owner, value in lent:
            borrowed = value * self.share
            for member in self.members[owner]:
                if result.get(member, 0.0) < borrowed:
                    result[member] = borrowed
        return result

    def lend_similarity(self, best: dict[int, float], similarity: Callable[[int], float]) -> dict[int, float]:
        """Dense scores ``best`` (memory id -> similarity) with each borrower raised to ``share`` of its
        overview's similarity where that is more; ``similarity`` gives an overview's when it is not in ``best``."""
        if not self.owner:
            return best
        overview: dict[int, float] = {}
        lent = dict(best)
        for memory_id, score in best.items():
            owner = self.owner.get(memory_id)
            if owner is None:
                continue
            if owner not in overview:
                overview[owner] = best[owner] if owner in best else similarity(owner)
            lent[memory_id] = max(score, self.share * overview[owner])
        return lent

    def lend_arrays(self, ids: Any, values: Any) -> tuple[Any, Any]:
        """The same as ``lend`` over numpy arrays of ids and contributions (``lexical_large``)."""
        import numpy as np

        found = np.isin(ids, np.fromiter(self.members, dtype=np.int64, count=len(self.members)))
        if not found.any():
            return ids, values
        present = list(zip(ids[found].tolist(), values[found].tolist(), strict=True))
        members = np.fromiter((m for owner, _ in present for m in self.members[owner]), dtype=np.int64)
        borrowed = np.fromiter(
            (value * self.share for owner, value in present for _ in self.members[owner]), dtype=np.float32
        )
        scores = np.zeros(int(max(ids.max(), members.max())) + 1, dtype=np.float32)
        scores[ids] = values
        np.maximum.at(scores, members, borrowed)
        kept = np.flatnonzero(scores)
        return kept, scores[kept]


def _nearest(folder: str, overviews: dict[str, int]) -> int | None:
    """The overview of ``folder`` or of the nearest folder above it (never the top level)."""
    while folder:
        owner = overviews.get(folder)
        if owner is not None:
            return owner
        folder = folder.rpartition("/")[0]
    return None
