"""Frozen records shared by every layer: memories, hits and query filters."""

from __future__ import annotations

from memrouter.core.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CHANNELS",
    "KINDS",
    "MODES",
    "STATUSES",
    "PENDING",
    "SEARCHED_CHANNELS",
    "KIND_CHANNEL",
    "KIND_FOLDERS",
    "FOLDER_KINDS",
    "Memory",
    "MemorySummary",
    "Match",
    "Hit",
    "ModeChoice",
    "Provenance",
    "Filters",
    "Entity",
    "GraphPath",
    "Related",
    "Relation",
    "channel_for_kind",
]

# The one list of each: the library, the CLI, the MCP server and the docs use these.
MODES = ("hybrid", "lexical", "semantic")
CHANNELS = ("long_term", "sprint", "team", "short_term")
STATUSES = ("active", "obsolete", "pending_review", "archived")
# A memory held for review: never a search, list or context result unless asked for (``memrouter.ops.review``).
PENDING = "pending_review"
# The channels a search covers when none is named (team and short_term live elsewhere).
SEARCHED_CHANNELS = ("long_term", "sprint")

# The channel a kind implies when the memory names none.
KIND_CHANNEL: dict[str, str] = {
    "adr": "long_term",
    "pattern": "long_term",
    "convention": "long_term",
    "schema": "long_term",
    "decision": "long_term",
    "fact": "long_term",
    "preference": "long_term",
    "incident": "long_term",
    "research": "sprint",
    "wip_decision": "sprint",
    "feature_spec": "sprint",
    "investigation": "sprint",
    "agent_status": "team",
    "task_assignment": "team",
    "handoff": "team",
    "shared_state": "team",
    "scratchpad": "short_term",
    "intermediate": "short_term",
}
# The kinds memrouter knows (any other kind is allowed and kept as written).
KINDS = tuple(KIND_CHANNEL)
# Kind and folder agree: a memory of these kinds saved without a name goes to its folder, and one saved
# into the folder without a kind gets it (``memrouter.ops.writes.save``).
KIND_FOLDERS: dict[str, str] = {
    "convention": "conventions",
    "decision": "decisions",
    "adr": "adr",
    "pattern": "patterns",
}
FOLDER_KINDS: dict[str, str] = {folder: kind for kind, folder in KIND_FOLDERS.items()}


def channel_for_kind(kind: str | None, name: str = "") -> str:
    """The default channel: from the kind, else sprint under ``sprints/``, else long-term."""
    if kind and kind in KIND_CHANNEL:
        return KIND_CHANNEL[kind]
    if name.startswith("sprints/"):
        return "sprint"
    return "long_term"


@record
class Memory:
    """One canonical memory: a markdown file under the memories root.

    ``text`` is the whole file as stored and ``hash`` its SHA-256; ``body`` is
    the text after any front matter. ``extra`` keeps front-matter keys
    memrouter does not interpret; ``problems`` lists what could not be parsed
    (the memory is still usable as plain text).
    """

    name: str
    path: str
    text: str
    hash: str
    body: str
    title: str
    tags: tuple[str, ...] = ()
    channel: str = "long_term"
    kind: str | None = None
    scope: str = "project"
    status: str = "active"
    source: str | None = None
    author: str | None = None
    confidence: float = 1.0
    verified_by: str | None = None
    created: str | None = None
    updated: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    expires: str | None = None
    anchors: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    problems: tuple[str, ...] = ()

    def to_dict(self, *, content: bool = True) -> dict[str, Any]:
        """A JSON-ready view; ``content=False`` leaves out the text and body."""
        data: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "path": self.path,
            "hash": self.hash,
            "channel": self.channel,
            "kind": self.kind,
            "scope": self.scope,
            "status": self.status,
            "tags": list(self.tags),
            "source": self.source,
            "author": self.author,
            "confidence": self.confidence,
            "verified_by": self.verified_by,
            "created": self.created,
            "updated": self.updated,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "expires": self.expires,
            "anchors": list(self.anchors),
            "problems": list(self.problems),
        }
        if content:
            data["content"] = self.text
        return data


@record
class MemorySummary:
    """One memory as listed: what the index knows of it, without its text."""

    name: str
    title: str
    channel: str
    kind: str | None
    status: str
    tags: tuple[str, ...]
    hash: str
    path: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "channel": self.channel,
            "kind": self.kind,
            "status": self.status,
            "tags": list(self.tags),
            "hash": self.hash,
            "path": self.path,
            "size": self.size,
        }


@record
class Match:
    """Why a hit was found: one retriever, its rank (1-based) and raw score."""

    retriever: str
    rank: int
    score: float
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"retriever": self.retriever, "rank": self.rank, "score": self.score}
        if self.detail is not None:
            data["detail"] = self.detail
        return data


@record
class Provenance:
    """Where a memory came from: who wrote it, from what, when, how sure, and who verified it.

    ``from_git`` names the fields read from the file's git history because its
    front matter does not say (a hand-edited file); nothing here is guessed.
    """

    author: str | None = None
    source: str | None = None
    created: str | None = None
    updated: str | None = None
    confidence: float = 1.0
    verified_by: str | None = None
    from_git: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "author": self.author, "source": self.source, "created": self.created, "updated": self.updated,
            "confidence": self.confidence, "verified_by": self.verified_by,
        }  # fmt: skip
        if self.from_git:
            data["from_git"] = list(self.from_git)
        return data


@record
class Hit:
    """One search result, from the canonical files or an external service."""

    name: str
    title: str
    score: float
    source: str
    channel: str
    path: str | None
    hash: str
    snippet: str = ""
    why: tuple[Match, ...] = ()
    kind: str | None = None
    content: str | None = None
    validity: str | None = None
    provenance: Provenance | None = None
    # The chance, 0 to 1, that the memory answers the query, the same in every mode (``memrouter.ops.relevance``);
    # None for a hit the index does not hold (an external service's). ``weak``: below the relevance floor.
    relevance: float | None = None
    weak: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the search contract (README "Command line"), plus snippet and kind.

        ``validity`` (only when set) marks a hit that a default search leaves
        out: ``superseded``, ``obsolete``, ``expired``, ``not_yet_valid`` or ``archived``.
        ``relevance`` and ``weak`` (when the index judged the hit): see ``memrouter.ops.relevance``.
        """
        data: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "score": self.score,
            "source": self.source,
            "channel": self.channel,
            "path": self.path,
            "hash": self.hash,
            "why": [m.to_dict() for m in self.why],
            "snippet": self.snippet,
            "kind": self.kind,
        }
        if self.content is not None:
            data["content"] = self.content
        if self.validity is not None:
            data["validity"] = self.validity
        if self.provenance is not None:
            data["provenance"] = self.provenance.to_dict()
        if self.relevance is not None:
            data["relevance"] = self.relevance
            data["weak"] = self.weak
        return data


@record
class ModeChoice:
    """The mode a search runs in (``mode``), the one it was asked for (``asked``), and, when they differ or the
    vectors cover only part of the memories, what to say about it (``notice``: on stderr, in ``status``, in each
    hit's ``why`` and in the web UI). ``pending``: memories without vectors when the choice was made;
    ``embedded``: how many of those the search embedded first."""

    asked: str
    mode: str
    pending: int = 0
    embedded: int = 0
    notice: str | None = None

    @property
    def degraded(self) -> bool:
        """The search runs without the meaning retriever it was asked to use."""
        return self.mode != self.asked

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"asked": self.asked, "mode": self.mode, "pending": self.pending}
        if self.embedded:
            data["embedded"] = self.embedded
        if self.notice is not None:
            data["notice"] = self.notice
        return data


@record
class Filters:
    """Restrictions applied inside every retriever, so a filter never empties the pool.

    Empty tuples (and ``prefix=None``) mean "no restriction".
    """

    channels: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    prefix: str | None = None
    # In effect at this time (UTC ISO text): leaves out what is superseded, obsolete, expired or not yet valid.
    now: str | None = None
    archived: bool = True  # False leaves out archived memories
    records: bool = True  # False leaves out sprint records (sprints/<id>/_sprint)
    pending: bool = False  # True brings in memories pending review (asking for that status does too)
    # Only these index row ids (a time phrase's window: memrouter.index.sqlite.activity); None: no restriction.
    within: frozenset[int] | None = None

    @property
    def empty(self) -> bool:
        """No restriction on what a memory is (its validity aside)."""
        return not (self.channels or self.kinds or self.scopes or self.statuses or self.tags or self.prefix)

    @property
    def restricts(self) -> bool:
        """Any restriction at all, validity included."""
        return (
            not self.empty or self.now is not None or not self.archived or not self.records or not self.pending
            or self.within is not None
        )  # fmt: skip


@record
class Relation:
    """One typed edge of the knowledge graph: ``source`` -``type``-> ``target``.

    ``source`` and ``target`` are memory names or entity labels (``ADR-012``,
    ``#123``, ``src/x.py``); ``target_kind`` is ``memory`` or the entity's
    kind. ``memory`` and ``line`` say where the edge was written (``line`` 0
    for an entity naming a memory); ``valid_from``/``valid_until`` are that
    memory's validity.
    """

    source: str
    type: str
    target: str
    target_kind: str
    memory: str
    line: int
    detail: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "type": self.type, "target": self.target, "target_kind": self.target_kind,
            "memory": self.memory, "line": self.line, "detail": self.detail,
            "valid_from": self.valid_from, "valid_until": self.valid_until,
        }  # fmt: skip


@record
class Entity:
    """A node of the knowledge graph: a memory, or an entity some memories name.

    ``memories`` are the memories that *are* this entity (its name, alias,
    ADR id or path); ``relations`` its edges in and out, when asked for.
    """

    name: str
    kind: str
    key: str
    memories: tuple[str, ...] = ()
    relations: tuple[Relation, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "key": self.key, "memories": list(self.memories),
            "relations": [r.to_dict() for r in self.relations],
        }  # fmt: skip


@record
class Related:
    """A node reached from another in ``depth`` hops, by the relations in ``via`` (in order)."""

    name: str
    kind: str
    depth: int
    via: tuple[Relation, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "depth": self.depth, "via": [r.to_dict() for r in self.via]}


@record
class GraphPath:
    """The shortest typed path between two nodes (``relations`` empty and ``found`` false when none)."""

    source: str
    target: str
    found: bool
    relations: tuple[Relation, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "target": self.target, "found": self.found,
            "relations": [r.to_dict() for r in self.relations],
        }  # fmt: skip
