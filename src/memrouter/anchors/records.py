"""The records of a verification: each anchor's state, each memory's, and the report.

States, best first: ``fresh`` (the anchored code has not changed since the
memory was last changed or verified), ``moved`` (it is elsewhere now: a
renamed file, a symbol in another file; the new anchor is proposed),
``stale`` (it changed: the commits, and the diff of just the anchored
symbol or lines), ``broken`` (the path or symbol is gone). ``unknown`` is
left for what cannot be checked at all (no git repository). A memory's state
is its worst anchor's, with ``moved`` counting as ``stale`` (the memory's
text names a place the code has left).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANCHOR_STATES", "MEMORY_STATES", "AnchorCheck", "MemoryCheck", "VerifyReport", "worst",
]  # fmt: skip

ANCHOR_STATES = ("fresh", "moved", "stale", "broken", "unknown")
MEMORY_STATES = ("fresh", "stale", "broken", "unknown")
_RANK = {"fresh": 0, "unknown": 1, "moved": 2, "stale": 2, "broken": 3}


def worst(states: list[str]) -> str:
    """A memory's state from its anchors' (``fresh`` when it has none)."""
    if not states:
        return "fresh"
    state = max(states, key=lambda item: _RANK[item])
    return "stale" if state == "moved" else state


@dataclass(frozen=True, slots=True)
class AnchorCheck:
    """One anchor's state. ``changed_in``: the commits (full ids, oldest first) that changed what it anchors
    since the memory's baseline; ``uncommitted``: the work tree changes it too; ``moved_to``: the anchor
    proposed in its place; ``note``: what the reader should know (a file-level check, a rename, a problem)."""

    written: str
    kind: str
    origin: str
    status: str
    path: str | None = None
    symbol: str | None = None
    lines: str | None = None
    commit: str | None = None
    changed_in: tuple[str, ...] = ()
    uncommitted: bool = False
    moved_to: str | None = None
    note: str | None = None
    diff: str | None = None
    line: int | None = None  # the memory's line an inferred anchor came from

    @property
    def label(self) -> str:
        """The anchor as one would write it (``path#Symbol``, ``path:L3-L9``, ``commit:<id>``)."""
        if self.commit:
            return f"commit:{self.commit[:12]}"
        where = self.path or self.written
        if self.symbol:
            return f"{where}#{self.symbol}"
        return f"{where}:{self.lines}" if self.lines else where

    def to_dict(self, *, diff: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path, "symbol": self.symbol, "lines": self.lines, "status": self.status,
            "changed_in": list(self.changed_in) or None, "moved_to": self.moved_to, "kind": self.kind,
            "origin": self.origin, "written": self.written, "commit": self.commit, "uncommitted": self.uncommitted,
            "note": self.note, "line": self.line,
        }  # fmt: skip
        if diff:
            data["diff"] = self.diff
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnchorCheck:
        return cls(
            written=str(data.get("written") or ""), kind=str(data.get("kind") or "file"),
            origin=str(data.get("origin") or "explicit"), status=str(data.get("status") or "unknown"),
            path=data.get("path"), symbol=data.get("symbol"), lines=data.get("lines"), commit=data.get("commit"),
            changed_in=tuple(data.get("changed_in") or ()), uncommitted=bool(data.get("uncommitted")),
            moved_to=data.get("moved_to"), note=data.get("note"), diff=data.get("diff"), line=data.get("line"),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class MemoryCheck:
    """One memory's state: its worst anchor's; ``baseline`` the commit its anchors are compared from (None:
    the memory itself has uncommitted changes, so they are taken as checked now)."""

    name: str
    status: str
    anchors: tuple[AnchorCheck, ...]
    baseline: str | None = None
    verified: str | None = None
    notes: tuple[str, ...] = ()
    ago: int | None = None  # commits since the newest change behind a stale anchor (None: fresh, or uncommitted)

    @property
    def summary(self) -> str:
        """One line for a search's ``why`` and a context label: ``stale: path#Symbol changed in 3f2a9c1, 4 commits
        ago`` (empty when fresh)."""
        if self.status == "fresh":
            return ""
        bad = [a for a in self.anchors if a.status not in ("fresh",)]
        bad.sort(key=lambda a: -_RANK[a.status])
        first = bad[0] if bad else None
        if first is None:
            return self.status
        if first.status == "broken":
            if first.note and first.path and first.note.startswith(first.path):
                what = first.note
            else:
                what = f"{first.label}: {first.note}" if first.note else f"{first.label} is gone"
        elif first.status == "moved":
            what = f"{first.label} moved to {first.moved_to}"
        elif first.status == "unknown":
            what = f"{first.label} cannot be checked"
        elif first.changed_in:
            when = (
                f", {self.ago} commit{'' if self.ago == 1 else 's'} ago"
                if self.ago
                else (", in the last commit" if self.ago == 0 else "")
            )
            what = f"{first.label} changed in {first.changed_in[-1][:7]}{when}"
            if first.uncommitted:
                what += " (and in uncommitted edits)"
        else:
            what = f"{first.label} changed in uncommitted edits"
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        return f"{self.status}: {what}{more}"

    def to_dict(self, *, diff: bool = True) -> dict[str, Any]:
        return {
            "name": self.name, "status": self.status, "summary": self.summary or None, "baseline": self.baseline,
            "verified": self.verified, "notes": list(self.notes), "ago": self.ago,
            "anchors": [anchor.to_dict(diff=diff) for anchor in self.anchors],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryCheck:
        return cls(
            name=str(data["name"]), status=str(data["status"]),
            anchors=tuple(AnchorCheck.from_dict(item) for item in data.get("anchors") or ()),
            baseline=data.get("baseline"), verified=data.get("verified"), notes=tuple(data.get("notes") or ()),
            ago=data.get("ago"),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """A verification: the anchored memories asked for (all when no names were given) and what was checked."""

    memories: tuple[MemoryCheck, ...]
    head: str | None
    checked: int  # memories looked at (anchored or not)
    notes: tuple[str, ...] = ()
    since: str | None = None
    took_ms: float = 0.0
    counts_by_kind: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Anchored memories by state."""
        return {state: sum(m.status == state for m in self.memories) for state in MEMORY_STATES}

    @property
    def failing(self) -> tuple[MemoryCheck, ...]:
        """The stale and broken memories (what ``--check`` fails on)."""
        return tuple(m for m in self.memories if m.status in ("stale", "broken"))

    def to_dict(self, *, diff: bool = True) -> dict[str, Any]:
        return {
            "head": self.head, "since": self.since, "checked": self.checked, "anchored": len(self.memories),
            "counts": self.counts(), "anchors_by_kind": dict(self.counts_by_kind), "notes": list(self.notes),
            "took_ms": round(self.took_ms, 1), "memories": [m.to_dict(diff=diff) for m in self.memories],
        }  # fmt: skip
