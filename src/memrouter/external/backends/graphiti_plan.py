"""What one memory becomes in Graphiti: an episode, entities and typed edges (no Graphiti import).

``plan_memory(draft, group)`` reads the memory back from the draft's file
text (``draft.content``; its name from the ``memrouter:<name>`` context) and
turns memrouter's knowledge graph for it (``memrouter.index.graph.extract``)
into plain records:

- one episode: the file text, ``source_description`` = ``memrouter:<name>``,
  ``valid_at`` from the memory's record time (``valid_from``, else the
  draft's ``recorded_at``, else ``created``, else ``updated``);
- one entity for the memory itself and one per key its edges point at;
- one edge per typed reference, whose ``fact`` is the line it was read from,
  ``valid_at`` the memory's and ``invalid_at`` its ``valid_until``; a memory
  that is obsolete or superseded gets ``invalid_at`` (when it has none) and
  ``expired_at`` from when it was invalidated.

Every id is a UUID derived from the group and the names, so writing the same
plan twice (a re-run after a crash) overwrites, never duplicates.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime

from memrouter.core.errors import InvalidInput
from memrouter.external.backends.base import MemoryDraft
from memrouter.index.graph.extract import extract, name_key
from memrouter.store.parse import parse_memory

__all__ = [
    "EdgePlan",
    "EntityPlan",
    "MemoryPlan",
    "episode_uuid",
    "memory_name",
    "parse_time",
    "plan_memory",
]

MARKER = "memrouter:"
_NAMESPACE = uuid.UUID("6f1d2c4e-8b0a-5d3e-9c7f-2a4b6d8e0f13")
_INVALID_STATUSES = frozenset({"obsolete", "superseded"})
_LIST_MARK = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class EntityPlan:
    """An entity of memrouter's graph: a key (``mem:ci/flaky``, ``adr:12``) and its label."""

    uuid: str
    key: str
    name: str


@dataclass(frozen=True, slots=True)
class EdgePlan:
    """A typed edge from the memory's entity to another, with the sentence it came from."""

    uuid: str
    source: str
    target: str
    name: str
    fact: str
    valid_at: datetime | None
    invalid_at: datetime | None
    expired_at: datetime | None


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """Everything one memory writes to one Graphiti group."""

    group: str
    name: str
    episode_uuid: str
    title: str
    content: str
    source_description: str
    valid_at: datetime | None
    invalid_at: datetime | None
    expired_at: datetime | None
    entities: tuple[EntityPlan, ...]
    edges: tuple[EdgePlan, ...]

    @property
    def invalid(self) -> bool:
        """Whether the memory no longer holds (its edges carry ``invalid_at``)."""
        return self.invalid_at is not None


def _uuid(group: str, *parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join((group, *parts))))


def episode_uuid(group: str, name: str) -> str:
    """The episode id of memory ``name`` in ``group``."""
    return _uuid(group, "episode", name)


def memory_name(draft: MemoryDraft) -> str:
    """The memory name a draft's ``memrouter:<name>`` context carries; ``InvalidInput`` without one."""
    if not draft.context.startswith(MARKER) or len(draft.context) == len(MARKER):
        raise InvalidInput(f"a Graphiti copy needs the context 'memrouter:<name>', got {draft.context!r}")
    return draft.context[len(MARKER) :]


def parse_time(value: object) -> datetime | None:
    """A front-matter date or time as an aware UTC datetime; ``None`` when absent or unreadable."""
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, date):
        found = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        try:
            found = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)


def _fact(lines: list[str], line: int, fallback: str) -> str:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    text = _LIST_MARK.sub("", text).strip()
    return text or fallback


def plan_memory(draft: MemoryDraft, group: str, *, now: datetime | None = None) -> MemoryPlan:
    """The plan for ``draft`` in ``group`` (see the module docstring)."""
    name = memory_name(draft)
    memory = parse_memory(name, f"{name}.md", draft.content)
    moment = now or datetime.now(UTC)
    valid_at = parse_time(memory.valid_from) or parse_time(draft.recorded_at) or parse_time(memory.created)
    valid_at = valid_at or parse_time(memory.updated)
    invalid_at = parse_time(memory.valid_until)
    expired_at = None
    if memory.status in _INVALID_STATUSES:
        expired_at = parse_time(memory.extra.get("invalidated_at")) or parse_time(memory.updated) or moment
        invalid_at = invalid_at or expired_at
    found = extract(memory)
    own_key = name_key(memory.name)
    own = EntityPlan(_uuid(group, "entity", own_key), own_key, memory.title or name)
    entities: dict[str, EntityPlan] = {own_key: own}
    lines = memory.text.splitlines()
    edges: list[EdgePlan] = []
    for raw in found.edges:
        target = entities.get(raw.key)
        if target is None:
            target = entities[raw.key] = EntityPlan(_uuid(group, "entity", raw.key), raw.key, raw.label)
        fallback = f"{own.name} {raw.type.replace('_', ' ')} {raw.label}"
        edges.append(
            EdgePlan(
                uuid=_uuid(group, "edge", name, raw.type, raw.key),
                source=own.uuid,
                target=target.uuid,
                name=raw.type.upper(),
                fact=_fact(lines, raw.line, fallback),
                valid_at=valid_at,
                invalid_at=invalid_at,
                expired_at=expired_at,
            )
        )
    return MemoryPlan(
        group=group,
        name=name,
        episode_uuid=episode_uuid(group, name),
        title=draft.title or name,
        content=draft.content,
        source_description=draft.context,
        valid_at=valid_at,
        invalid_at=invalid_at,
        expired_at=expired_at,
        entities=tuple(entities.values()),
        edges=tuple(edges),
    )
