"""Sprint records: which sprints exist, which one is open, and their dates.

A sprint's record is the committed file ``sprints/<id>/_sprint.md``; its front
matter holds ``sprint``, ``start``, ``end`` (ISO dates), ``goal`` and, once
closed, ``closed`` (an ISO time). Every clone of the repository therefore
agrees on the current sprint: the one open sprint (at most one is open at a
time). Times here are seconds since the epoch from the caller's clock, shown
as UTC ISO text, so tests control "now".
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.names import SUFFIX, validate_name
from memrouter.core.query import check_filter, iso_time
from memrouter.store import frontmatter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.store.files import MemoryStore

__all__ = [
    "DEFAULT_WEEKS",
    "LIFECYCLE_LOCK",
    "MAX_WEEKS",
    "RECORD",
    "SPRINTS_DIR",
    "Sprint",
    "check_sprint_id",
    "iso_date",
    "open_sprints",
    "read_sprints",
    "record_name",
    "record_text",
    "sprint_members",
    "sprint_of",
]

SPRINTS_DIR = "sprints"
RECORD = "_sprint"
DEFAULT_WEEKS = 4
MAX_WEEKS = 52
# The lock every sprint start and close holds, so two processes never open two sprints.
LIFECYCLE_LOCK = f"{SPRINTS_DIR}/{RECORD}-lifecycle"


@dataclass(frozen=True, slots=True)
class Sprint:
    """One sprint as its record says: dates, goal, and when it was closed (None while open)."""

    id: str
    start: str
    end: str
    goal: str | None = None
    closed: str | None = None

    @property
    def is_open(self) -> bool:
        return self.closed is None

    @property
    def record(self) -> str:
        return record_name(self.id)

    def overdue(self, now: float) -> bool:
        """Open past its end date (the end date itself is still in the sprint)."""
        return self.is_open and iso_date(now) > self.end

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "start": self.start, "end": self.end, "goal": self.goal, "closed": self.closed}


def iso_date(seconds: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


def check_sprint_id(raw: object) -> str:
    """A sprint id: one lower-case name segment (``2026-w02``, ``auth-rework``)."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("a sprint id must be non-empty text, such as 2026-w02")
    sprint_id = raw.strip()
    if "/" in sprint_id:
        raise InvalidInput(f"invalid sprint id {sprint_id!r}: one name segment, without '/'")
    validate_name(sprint_id, strict=True)
    return sprint_id


def record_name(sprint_id: str) -> str:
    return f"{SPRINTS_DIR}/{sprint_id}/{RECORD}"


def sprint_of(name: str) -> str | None:
    """The sprint a memory name lies in (``sprints/<id>/...``), if any."""
    parts = name.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == SPRINTS_DIR else None


def record_text(sprint_id: str, start: float, weeks: int, goal: str | None) -> str:
    """The text of a new sprint record."""

    if isinstance(weeks, bool) or not isinstance(weeks, int) or not 1 <= weeks <= MAX_WEEKS:
        raise InvalidInput(f"a sprint lasts 1 to {MAX_WEEKS} whole weeks (got {weeks!r})")
    fields: dict[str, Any] = {
        "sprint": sprint_id,
        "start": iso_date(start),
        "end": iso_date(start + (weeks * 7 - 1) * 86400),
        "kind": "sprint_record",
        "created": iso_time(start),
    }
    if goal is not None:
        fields["goal"] = check_filter("goal", goal, 500)
    return frontmatter.update(f"# Sprint {sprint_id}\n", fields)


def read_sprints(store: MemoryStore) -> list[Sprint]:
    """Every sprint with a record, by start date (a record that cannot be read is skipped)."""

    folder = store.root / SPRINTS_DIR
    if not folder.is_dir():
        return []
    found: list[Sprint] = []
    for entry in sorted(folder.iterdir()):
        if not (entry / f"{RECORD}{SUFFIX}").is_file():
            continue
        try:
            data = frontmatter.parse(store.read(record_name(entry.name)).text).data
        except (NotFound, InvalidInput):
            continue
        start, end = data.get("start"), data.get("end")
        if not isinstance(start, str) or not isinstance(end, str):
            continue
        goal, closed = data.get("goal"), data.get("closed")
        found.append(
            Sprint(entry.name, start, end, goal if isinstance(goal, str) else None, str(closed) if closed else None)
        )
    return sorted(found, key=lambda sprint: (sprint.start, sprint.id))


def open_sprints(store: MemoryStore) -> list[Sprint]:
    return [sprint for sprint in read_sprints(store) if sprint.is_open]


def sprint_members(store: MemoryStore, sprint_id: str) -> list[str]:
    """The names of a sprint's memories (its record left out), sorted."""
    prefix = f"{SPRINTS_DIR}/{sprint_id}/"
    return sorted(
        stat.name for stat in store.scan() if stat.name.startswith(prefix) and stat.name != record_name(sprint_id)
    )
