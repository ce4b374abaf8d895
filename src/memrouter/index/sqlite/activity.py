"""When each memory was written or changed, for time words in queries and recency.

A memory's activity times are its commit times from git
(``memrouter.index.sqlite.recordtime``), plus the ``created``/``updated`` its front matter
states; a file with neither (never committed, no dates) has its file time.
"Last month" selects the memories with any activity time in that month;
recency decays a hit by the age of its latest activity.

Times are compared as UTC ISO text to the second (``2026-01-05T09:30:00Z``);
a front-matter date is its midnight, and a stated offset is ignored.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from pathlib import Path

from memrouter.core.query import iso_time
from memrouter.core.records import replace
from memrouter.index.sqlite.recordtime import git_top, record_times, refresh_record_times

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.core.model import Memory
    from memrouter.core.timewords import TimeWords

    Lent = Callable[[], tuple[str | None, dict[str, list[int]] | None]]

__all__ = ["ActivityTimes", "normal_time"]

_STATED = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?))?")


def normal_time(value: object) -> str | None:
    """Front-matter time text as UTC ISO text to the second, or ``None`` when it is not a date."""
    match = _STATED.match(str(value).strip()) if value is not None else None
    if match is None:
        return None
    clock = match.group(2) or "00:00:00"
    return f"{match.group(1)}T{clock if len(clock) == 8 else clock + ':00'}Z"


class ActivityTimes:
    """Each memory's activity times, cached per index generation and git ``HEAD`` (one per router)."""

    def __init__(self, root: Path, lent: Lent | None = None) -> None:
        self.root = root
        # A past router (memrouter.ops.asof) has no git of its own: the live router lends its commit times.
        self.lent = lent
        self._key: tuple[object, ...] | None = None
        self._times: dict[int, list[str]] = {}
        self._latest: dict[int, str] = {}
        self._windows: dict[tuple[str, str], tuple[dict[int, list[str]], set[int]]] = {}
        self._top: Path | None | bool = False  # the git work tree, found once (False: not looked for yet)
        self._lending: dict[float, tuple[str | None, dict[str, list[int]]]] = {}

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Read the commits ``HEAD`` gained since the last look (a few file reads when it has not moved)."""

        if self._top is False:
            self._top = git_top(self.root)
        refresh_record_times(conn, self.root, self._top if isinstance(self._top, Path) else None)

    def times(self, conn: sqlite3.Connection) -> dict[int, list[str]]:
        """Memory id -> its activity times, oldest first (git is read first when ``HEAD`` moved)."""
        if self.lent is None:
            self.refresh(conn)
            token, commits = None, None
        else:
            token, commits = self.lent()
        key = (
            token,
            *(
                row[0]
                for row in conn.execute("SELECT value FROM meta WHERE key IN ('generation', 'record_head', 'epoch')")
            ),
        )
        if key != self._key:
            self._times = self._gather(conn, commits)
            self._latest = {memory_id: times[-1] for memory_id, times in self._times.items() if times}
            self._key = key
        return self._times

    def commits_until(self, conn: sqlite3.Connection, moment: float) -> tuple[str | None, dict[str, list[int]]]:
        """What this (live) router lends a past one: (a token that changes with ``HEAD``, commit times <= ``moment``)."""
        import json

        self.refresh(conn)
        row = conn.execute("SELECT value FROM meta WHERE key = 'record_head'").fetchone()
        token = row[0] if row else None
        lent = self._lending.get(moment)
        if lent is not None and lent[0] == token:  # the same commits as last time: no need to read them again
            return lent
        commits = {
            name: kept
            for name, listed in conn.execute("SELECT name, commits FROM record_times")
            if (kept := [t for t in json.loads(listed) if t <= moment])
        }
        if len(self._lending) >= 8:
            self._lending.clear()
        self._lending[moment] = (token, commits)
        return token, commits

    @staticmethod
    def _gather(conn: sqlite3.Connection, lent: dict[str, list[int]] | None) -> dict[int, list[str]]:
        import json  # lazy: a search without time words never reads commit lists

        if lent is None:
            listed = conn.execute("SELECT name, commits FROM record_times")
            lent = {name: json.loads(commits) for name, commits in listed}
        found: dict[int, list[str]] = {}
        for memory_id, name, created, updated, mtime_ns in conn.execute(
            "SELECT id, name, created, updated, mtime_ns FROM memories"
        ):
            stated = {t for t in (normal_time(created), normal_time(updated)) if t is not None}
            committed = {iso_time(moment) for moment in lent.get(name, ())}
            times = stated | committed
            if not times and mtime_ns > 0:
                times = {iso_time(mtime_ns / 1e9)}
            found[memory_id] = sorted(times)
        return found

    def within(self, conn: sqlite3.Connection, start: str | None, end: str | None) -> set[int]:
        """Ids of the memories with an activity time in ``[start, end)`` (an open side is unbounded).

        Cached per window while the times stand ("last month" is asked again and again).
        """
        low, high = start or "", end or "\uffff"
        times = self.times(conn)
        cached = self._windows.get((low, high))
        if cached is not None and cached[0] is times:
            return cached[1]
        selected: set[int] = set()
        for memory_id, moments in times.items():
            at = bisect.bisect_left(moments, low)
            if at < len(moments) and moments[at] < high:
                selected.add(memory_id)
        if len(self._windows) >= 64:
            self._windows.clear()
        self._windows[low, high] = (times, selected)
        return selected

    def latest(self, conn: sqlite3.Connection) -> dict[int, str]:
        """Id -> its latest activity time."""
        self.times(conn)
        return self._latest

    def resolve(self, conn: sqlite3.Connection, words: TimeWords) -> TimeWords | None:
        """``words`` bounded by the date of the memory it references ("before ADR-012"), or ``None``.

        The reference is a memory name (``mem:name``), or an ADR or issue id
        in a memory's name or title; the earliest such memory's first
        activity is the moment.
        """
        reference = words.reference
        if reference is None:
            return words
        if reference.startswith("mem:"):
            rows = conn.execute("SELECT id FROM memories WHERE name = ?", (reference[4:],)).fetchall()
        else:
            digits = reference.rsplit("-", 1)[-1].lstrip("#").lstrip("0") or "0"
            label = re.compile(
                rf"(?<![\w])(?:adr[-_ ]?0*{digits}|#{digits})(?![\d])" if reference.startswith("ADR-") or
                reference.startswith("#") else re.escape(reference), re.IGNORECASE,
            )  # fmt: skip
            rows = [
                (memory_id,)
                for memory_id, name, title in conn.execute("SELECT id, name, title FROM memories")
                if label.search(name) or label.search(title)
            ]
        times = self.times(conn)
        firsts = [times[memory_id][0] for (memory_id,) in rows if times.get(memory_id)]
        return words.bounded_by(min(firsts)) if firsts else None

    def dated(self, memory: Memory, conn: sqlite3.Connection) -> Memory:
        """``memory`` with ``created``/``updated`` its front matter leaves out taken from git, else the file time.

        Committed files: the first and last commit that touched the file
        (renames followed). Never committed: the file's modification time for both.
        """
        if memory.created is not None and memory.updated is not None:
            return memory

        self.refresh(conn)
        found = record_times(conn, [memory.name]).get(memory.name)
        if found is None:
            try:
                moment = Path(memory.path).stat().st_mtime
            except OSError:
                return memory
            found = (int(moment), int(moment))
        created, updated = memory.created or iso_time(found[0]), memory.updated or iso_time(found[1])
        return replace(memory, created=created, updated=updated)
