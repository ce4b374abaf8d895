"""Channels and time over the memory files: routing a save, sprints, promotion, validity.

The channel of a save comes from its ``channel`` argument, else its ``kind``
(``model.KIND_CHANNEL``), else the sprint for an unnamed note while a sprint
is open (long-term otherwise), and long-term for a named file. A save that
names neither ``channel`` nor ``kind`` but a name is written where it is
named, as always (Serena's ``write_memory`` relies on it).

Nothing is retired by guesswork: a memory leaves default search only when its
file says so (``status: obsolete`` or ``archived``, ``superseded_by``,
``valid_until``/``expires`` in the past, ``valid_from`` in the future) or when
another memory's ``supersedes`` names it. ``invalidate`` and ``promote`` set
those keys under the memory's lock, from the read to the rename, and never
delete. Archiving a sprint memory sets ``status: archived`` in place, so its
name and every ``mem:`` reference to it stay valid.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.core.model import KIND_CHANNEL, Filters, Memory
from memrouter.core.names import validate_name
from memrouter.core.query import iso_time
from memrouter.index.sqlite.queries import hit_rows, long_term_twins
from memrouter.ops.audit import audited
from memrouter.ops.write_guard import CONTENT, guarded, refuse_secrets
from memrouter.store import frontmatter
from memrouter.store.compose import check_reason
from memrouter.store.sprints import (
    LIFECYCLE_LOCK,
    check_sprint_id,
    open_sprints,
    read_sprints,
    record_name,
    record_text,
    sprint_members,
    sprint_of,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from memrouter.index.sqlite.keeper import IndexKeeper
    from memrouter.store.files import MemoryStore
    from memrouter.store.sprints import Sprint

__all__ = ["DUPLICATE_COSINE", "Lifecycle", "Promotion", "SprintClose"]

# A long-term memory at least this similar (cosine, dense index) to a promoted one is a duplicate.
DUPLICATE_COSINE = 0.92
TEAM_POINTER = (
    "the team channel is live state in team.sqlite, not memory files: use `memrouter team ...` "
    "(Router.team() in Python, the team_* MCP tools)"
)
SHORT_TERM_REFUSAL = "short-term notes are never files: use the scratchpad (Router.scratchpad(), MCP scratchpad_write)"
NO_SPRINT = "no sprint is open; open one with `memrouter sprint start ID`"


@dataclass(frozen=True, slots=True)
class Promotion:
    """A sprint memory made long-term: where from, where to, and whether it merged into an existing one."""

    source: str
    target: str
    sprint: str | None
    reason: str
    merged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "target": self.target, "sprint": self.sprint, "reason": self.reason,
            "merged": self.merged,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class SprintClose:
    """What closing a sprint did (or, with ``dry_run``, would do)."""

    sprint: str
    promoted: tuple[Promotion, ...]
    archived: tuple[str, ...]
    dry_run: bool
    closed: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sprint": self.sprint, "promoted": [p.to_dict() for p in self.promoted],
            "archived": list(self.archived), "dry_run": self.dry_run, "closed": self.closed,
        }  # fmt: skip


class Lifecycle:
    """Routing, sprints, promotion and invalidation over one store and its index.

    Every change is a read-modify-write under the changed memories' locks,
    indexed before the locks are released (docs/architecture.md).
    """

    def __init__(self, store: MemoryStore, index: IndexKeeper, lock: Any, clock: Callable[[], float]) -> None:
        self.store = store
        self.index = index
        self.lock = lock
        self.clock = clock

    # -- routing -------------------------------------------------------------
    def holding(self, name: str) -> Any:
        """The sprint lifecycle lock while a memory goes into ``sprints/`` (so no close runs meanwhile), else nothing.

        Taken before the memory's own lock, in the order ``close`` takes them.
        """

        return self.store.lock(LIFECYCLE_LOCK) if sprint_of(name) is not None else nullcontext()

    def place(self, given: str | None, composed: str, channel: str | None, kind: str | None) -> str:
        """The name a save writes: ``composed`` as made from the request, moved into the sprint if it goes there."""
        if given is not None and channel is None and kind is None:
            return composed
        target = channel or KIND_CHANNEL.get(kind or "")
        if target is None and given is None and self.current() is not None:
            target = "sprint"
        if target == "team":
            raise InvalidInput(f"cannot save to the team channel: {TEAM_POINTER}")
        if target == "short_term":
            raise InvalidInput(f"cannot save to the short_term channel: {SHORT_TERM_REFUSAL}")
        if target != "sprint":
            return composed
        sprint = self.current()
        if sprint is None:
            raise InvalidInput(f"cannot save a sprint memory: {NO_SPRINT}")
        inside = sprint_of(composed)
        if inside is None:
            return validate_name(f"sprints/{sprint.id}/{composed}", strict=True)
        if inside != sprint.id:
            raise InvalidInput(f"memory {composed!r} is in sprint {inside!r}, but the open sprint is {sprint.id!r}")
        return composed

    # -- sprints -------------------------------------------------------------
    def current(self) -> Sprint | None:
        """The open sprint (the latest started, should a merge have left two open)."""
        found = open_sprints(self.store)
        return found[-1] if found else None

    def sprint(self, sprint_id: str) -> Sprint:

        sprint_id = check_sprint_id(sprint_id)
        for sprint in read_sprints(self.store):
            if sprint.id == sprint_id:
                return sprint
        raise NotFound(f"no sprint {sprint_id!r}; `memrouter sprint status` lists the sprints")

    @audited("sprint_start")
    def start(self, sprint_id: str, *, weeks: int, goal: str | None) -> Sprint:
        """Open sprint ``sprint_id`` (``Conflict`` while another is open or the id was used)."""

        sprint_id = check_sprint_id(sprint_id)
        if goal:
            refuse_secrets(goal, f"the goal of sprint {sprint_id!r}")
        text = record_text(sprint_id, self.clock(), weeks, goal)
        with self.lock, self.store.lock(LIFECYCLE_LOCK):
            current = self.current()
            if current is not None:
                raise Conflict(f"sprint {current.id!r} is still open; close it first: `memrouter sprint close`")
            if self.store.exists(record_name(sprint_id)):
                raise Conflict(f"sprint {sprint_id!r} already exists (closed); choose another id")
            self.index.index_written(self.store.write(record_name(sprint_id), text, expected_hash="", record=True))
        return self.sprint(sprint_id)

    def status(self) -> tuple[dict[str, Any], list[str]]:
        """The sprint part of ``status`` and its warnings (a sprint past its end, two open sprints)."""

        now = self.clock()
        found = open_sprints(self.store)
        warnings = (
            [f"sprints {', '.join(s.id for s in found)} are all open; close all but one"] if len(found) > 1 else []
        )
        current = found[-1] if found else None
        if current is None:
            return {"current": None}, warnings
        if current.overdue(now):
            warnings.append(f"sprint {current.id!r} ended on {current.end}; close it: `memrouter sprint close`")
        members = len(sprint_members(self.store, current.id))
        return {"current": current.to_dict() | {"memories": members, "overdue": current.overdue(now)}}, warnings

    @audited("sprint_close")
    def close(
        self,
        *,
        promote: Iterable[str] = (),
        archive_rest: bool = False,
        dry_run: bool = False,
        reason: str | None = None,
    ) -> SprintClose:
        """Close the open sprint: promote the named memories, archive the rest, mark the record closed.

        Every memory must end promoted or archived: without ``archive_rest``
        the memories not named refuse the close. Everything is checked
        before anything is written; ``dry_run`` only reports the plan.
        """

        with self.lock, self.store.lock(LIFECYCLE_LOCK):
            sprint = self.current()
            if sprint is None:
                raise NotFound(NO_SPRINT)
            members = [n for n in sprint_members(self.store, sprint.id) if self._pending(n)]
            prefix = f"sprints/{sprint.id}/"
            wanted = [n if n.startswith(prefix) else prefix + n for n in dict.fromkeys(promote)]
            unknown = [n for n in wanted if n not in members]
            if unknown:
                raise NotFound(f"not memories of sprint {sprint.id!r} awaiting the close: {', '.join(unknown)}")
            rest = [n for n in members if n not in wanted]
            if rest and not archive_rest:
                shown = ", ".join(rest[:10]) + (" ..." if len(rest) > 10 else "")
                raise InvalidInput(
                    f"{len(rest)} memories of sprint {sprint.id!r} would be neither promoted nor archived "
                    f"({shown}); name them with --promote or pass --archive-rest"
                )
            why = reason or f"promoted at the close of sprint {sprint.id}"

            refuse_secrets(why, "the promotion reason")
            plans = [self._plan(n, None, why, merge=False) for n in wanted]
            if dry_run:
                return SprintClose(sprint.id, tuple(plans), tuple(rest), True, None)
            promoted = tuple(self._promote(plan, merge=False) for plan in plans)
            for name in rest:
                self._update(name, {"status": "archived"})
            closed = iso_time(self.clock())
            self._update(sprint.record, {"closed": closed}, record=True)
        return SprintClose(sprint.id, promoted, tuple(rest), False, closed)

    def _pending(self, name: str) -> bool:
        """A sprint memory not yet promoted (superseded) nor archived."""
        memory = self.store.read(name)
        return memory.superseded_by is None and memory.status != "archived"

    # -- promotion -----------------------------------------------------------
    @audited("promote")
    def promote(
        self,
        name: str,
        *,
        to: str = "long_term",
        reason: str,
        target: str | None = None,
        merge: bool = False,
        expected_hash: str | None = None,
    ) -> Promotion:
        """Write sprint memory ``name`` as a long-term memory with its provenance; see ``Router.promote``."""

        if to != "long_term":
            raise InvalidInput(f"memories are promoted to 'long_term' only (got {to!r})")

        why = check_reason(reason)
        if not why or not why.strip():
            raise InvalidInput("give a reason for the promotion")
        refuse_secrets(why, "the promotion reason")
        source = validate_name(name, strict=False)
        with self.lock:
            plan = self._plan(source, None if target is None else validate_name(target), why, merge=merge)
            return self._promote(plan, merge=merge, expected_hash=expected_hash)

    def archive(self, name: str, *, expected_hash: str | None = None) -> Memory:
        """Archive one sprint memory in place (``status: archived``), as ``close`` does with the rest:
        kept in the file and in ``search --archived``, out of default results. ``Conflict`` when it
        changed since ``expected_hash`` or is promoted, superseded, invalidated or archived already."""

        source = validate_name(name, strict=False)
        with self.lock, self.store.lock(LIFECYCLE_LOCK):
            memory = self.store.read(source)
            if memory.channel != "sprint":
                raise InvalidInput(
                    f"memory {source!r} is in the {memory.channel} channel; only sprint memories are archived"
                )
            _check_promotable(memory)
            if memory.status == "archived":
                raise Conflict(f"memory {source!r} is archived already")
            return self._update(source, {"status": "archived"}, expected_hash=expected_hash)

    @audited("archive")
    def retire(self, name: str, reason: str, *, expected_hash: str | None = None) -> Memory:
        """Archive memory ``name`` of any channel in place (``status: archived``, ``archived_reason``): kept in its
        file and in ``search --archived``, out of default results (the janitor's proposal for a memory long
        unused). ``Conflict`` when it changed since ``expected_hash``."""

        why = check_reason(reason)
        if not why or not why.strip():
            raise InvalidInput("give a reason for archiving")
        refuse_secrets(why, "the archiving reason")
        name = validate_name(name, strict=False)
        with self.lock:
            return self._update(
                name, {"status": "archived", "archived_reason": why, "archived_at": iso_time(self.clock())},
                expected_hash=expected_hash,
            )  # fmt: skip

    def _plan(self, source: str, target: str | None, reason: str, *, merge: bool) -> Promotion:
        """Check a promotion without writing; ``Conflict`` on a duplicate unless ``merge``."""

        memory = self.store.read(source)
        refuse_secrets(memory.text, f"memory {source!r}")  # refused before any promotion of a close is written
        if memory.channel != "sprint":
            raise InvalidInput(
                f"memory {source!r} is in the {memory.channel} channel; only sprint memories are promoted"
            )
        _check_promotable(memory)
        sprint = sprint_of(memory.name)
        target = target or (memory.name.split("/", 2)[2] if sprint else memory.name)
        twin = self._twin(memory, target)
        if twin is not None and not merge:
            raise Conflict(
                f"cannot promote {source!r}: long-term memory {twin[0]!r} {twin[1]}; "
                "merge into it with merge=True (--merge), or choose another name"
            )
        return Promotion(memory.name, twin[0] if twin else target, sprint, reason, merged=twin is not None)

    def _twin(self, memory: Memory, target: str) -> tuple[str, str] | None:
        """A long-term memory this one would duplicate: same name, content or title, or close in meaning."""
        if self.store.exists(target):
            return target, "already has that name"

        def look() -> tuple[str, str] | None:
            self.index.ensure_fresh()
            conn = self.index.conn
            found = long_term_twins(conn, memory.hash, memory.body, memory.title)
            if found is not None:
                return found
            if not self.index.dense.has_vectors(conn):
                return None  # no vectors: near-duplicates by meaning are not checked
            ranked = self.index.dense.search(conn, memory.body, Filters(channels=("long_term",)), limit=1)
            if ranked and ranked[0].score >= DUPLICATE_COSINE:
                row = hit_rows(conn, [ranked[0].memory_id]).get(ranked[0].memory_id)
                if row is not None:
                    return str(row["name"]), f"is near-identical (cosine {ranked[0].score:.2f})"
            return None

        result: tuple[str, str] | None = self.index.indexed(look)
        return result

    def _promote(self, plan: Promotion, *, merge: bool, expected_hash: str | None = None) -> Promotion:

        now = iso_time(self.clock())
        provenance = {
            "promoted_from": plan.source, "promotion_reason": plan.reason, "original_sprint": plan.sprint,
            "promoted_at": now,
        }  # fmt: skip
        with self.store.lock(plan.source, plan.target):
            memory = self.store.read(plan.source)
            if expected_hash is not None and memory.hash != expected_hash:
                raise Conflict(f"memory {plan.source!r} changed since it was read; read it again and retry")
            _check_promotable(memory)  # again under the lock: another process may have promoted it meanwhile
            if plan.merged:
                existing = self.store.read(plan.target)
                body = existing.text if memory.body.strip() in existing.body else (
                    f"{existing.text.rstrip()}\n\n{memory.body.strip()}\n"
                )  # fmt: skip
                text, expected = frontmatter.update(body, provenance), existing.hash
            else:
                changes = {"channel": "long_term", "superseded_by": None, "status": None, **provenance}
                text, expected = frontmatter.update(memory.text, changes), ""
            text, _ = guarded(self.index, plan.target, text, actor=None, purpose=CONTENT)
            self.index.index_written(self.store.write(plan.target, text, expected_hash=expected))
            marked = frontmatter.update(memory.text, {"superseded_by": plan.target})
            self.index.index_written(self.store.write(memory.name, marked, expected_hash=memory.hash))
        return plan

    # -- validity ------------------------------------------------------------
    @audited("invalidate")
    def invalidate(self, name: str, reason: str, superseded_by: str | None = None) -> Memory:
        """Mark ``name`` obsolete (and superseded) with the reason; see ``Router.invalidate``."""

        why = check_reason(reason)
        if not why or not why.strip():
            raise InvalidInput("give a reason for the invalidation")
        refuse_secrets(why, "the invalidation reason")
        name = validate_name(name, strict=False)
        newer = None if superseded_by is None else validate_name(superseded_by, strict=False)
        if newer == name:
            raise InvalidInput(f"memory {name!r} cannot supersede itself")
        if newer is not None and not self.store.exists(newer):
            raise NotFound(f"memory {newer!r} (the one said to supersede {name!r}) not found")
        now = iso_time(self.clock())
        with self.lock:
            memory = self.store.read(name)
            changes: dict[str, Any] = {"status": "obsolete", "invalidated_at": now, "invalidation_reason": why}
            if newer is not None:
                changes["superseded_by"] = newer
            if memory.valid_until is None or memory.valid_until > now:
                changes["valid_until"] = now
            return self._update(memory.name, changes)

    def _update(
        self, name: str, changes: dict[str, Any], *, record: bool = False, expected_hash: str | None = None
    ) -> Memory:
        """Set front-matter keys of one memory under its lock, from the read to the rename
        (``Conflict`` if it is no longer at ``expected_hash``)."""

        with self.store.lock(name):
            memory = self.store.read(name)
            if expected_hash is not None and memory.hash != expected_hash:
                raise Conflict(f"memory {name!r} changed since it was read; read it again and retry")
            text = frontmatter.update(memory.text, changes)
            written = self.store.write(memory.name, text, expected_hash=memory.hash, record=record)
            self.index.index_written(written)
        return written.memory


def _check_promotable(memory: Memory) -> None:
    """``Conflict`` when ``memory`` was already promoted, superseded or invalidated."""
    if memory.superseded_by is not None:
        raise Conflict(f"memory {memory.name!r} was already promoted or superseded: see {memory.superseded_by!r}")
    if memory.status == "obsolete":
        raise Conflict(f"memory {memory.name!r} was invalidated; it cannot be promoted")
