"""The external-backend protocol and the frozen records that cross it.

A backend is an external memory service (Forgetful, ...) that the router
consults to augment the canonical files and that sync writes to, one way.
The protocol is deliberately small::

    name, endpoint, health           identity and availability (see health.py)
    available(force=False) -> bool   cheap, cached reachability check
    search(query, limit) -> [ExternalHit]
    upsert(draft, remote_id=None) -> remote id
    mark_obsolete(remote_id, reason, superseded_by=None)
    get(remote_id) -> RemoteMemory
    close()

Optional abilities are separate ``runtime_checkable`` protocols
(``SupportsLinks``, ``SupportsInventory``), detected with ``isinstance``, never assumed. A backend
with a content limit says so in ``max_content`` (``None`` means no limit);
``upsert_parts`` builds split, linked memories on top of ``SupportsLinks``.

Every method raises only memrouter errors: ``BackendUnavailable`` (transient:
down, refused, timed out), ``BackendContractError`` (the answer broke the
protocol), ``NotFound`` (no remote memory with that id) and ``InvalidInput``
(the caller's own arguments are unusable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memrouter.core.model import Hit, Match
from memrouter.core.records import replace
from memrouter.store.parse import content_hash

if TYPE_CHECKING:
    from memrouter.external.backends.health import HealthCheck

__all__ = [
    "HealthChecked",
    "Backend",
    "ExternalHit",
    "MemoryDraft",
    "RemoteMemory",
    "SupportsInventory",
    "SupportsLinks",
    "backend_status",
    "upsert_parts",
]


@dataclass(frozen=True, slots=True)
class RemoteMemory:
    """One memory as an external service stores it.

    ``id`` is the service's id as a string (Forgetful's integers become
    ``"12"``). ``extra`` keeps the fields memrouter does not interpret.
    """

    id: str
    title: str
    content: str
    context: str = ""
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    importance: int | None = None
    is_obsolete: bool = False
    obsolete_reason: str | None = None
    superseded_by: str | None = None
    linked_ids: tuple[str, ...] = ()
    source_repo: str | None = None
    source_files: tuple[str, ...] = ()
    source_url: str | None = None
    similarity: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def hash(self) -> str:
        """The content hash of ``content`` (what the router deduplicates on)."""
        return content_hash(self.content)


@dataclass(frozen=True, slots=True)
class ExternalHit:
    """One search result from an external backend, ranked by similarity.

    ``rank`` is 1-based in the order the backend's similarity implies (not the
    service's own list order); ``hash`` is the SHA-256 of ``content``.
    ``context`` and ``source_repo`` are empty/None when the service's search
    does not return them. A hit that is part of a remote memory (a Graphiti
    fact of an episode) names that memory in ``origin_id``; a fact's valid
    window is ``valid_from``/``valid_until`` (ISO times, ``None`` = open),
    shown at the front of the snippet.
    """

    backend: str
    remote_id: str
    title: str
    content: str
    score: float
    rank: int
    hash: str
    tags: tuple[str, ...] = ()
    importance: int | None = None
    rerank_score: float | None = None
    context: str = ""
    source_repo: str | None = None
    origin_id: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None

    @property
    def mapped_ids(self) -> tuple[str, ...]:
        """The remote ids that tie this hit to a synced memory: its own, and the memory it is a part of."""
        return (self.remote_id,) if self.origin_id is None else (self.remote_id, self.origin_id)

    def to_hit(self, *, channel: str = "long_term", content: bool = False) -> Hit:
        """The router's ``Hit`` for this result: name ``<backend>:<remote id>``, no path."""
        snippet = " ".join(self.content.split())[:200]
        if self.valid_from is not None or self.valid_until is not None:
            snippet = f"[valid {self.valid_from or '...'} to {self.valid_until or 'now'}] {snippet}"
        return Hit(
            name=f"{self.backend}:{self.remote_id}",
            title=self.title,
            score=self.score,
            source=self.backend,
            channel=channel,
            path=None,
            hash=self.hash,
            snippet=snippet,
            why=(Match(retriever=self.backend, rank=self.rank, score=self.score),),
            content=self.content if content else None,
        )


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """What to write to a backend: one memory's fields, independent of any service.

    ``source_files`` and ``keywords`` are tuples so drafts stay hashable and
    comparable; backends clip or reject what their service cannot take.
    ``recorded_at`` is the memory's record time (ISO; its ``created``, from
    git when the front matter has none), for services that keep time.
    """

    title: str
    content: str
    context: str = ""
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    importance: int = 7
    source_repo: str | None = None
    source_files: tuple[str, ...] = ()
    source_url: str | None = None
    confidence: float | None = None
    recorded_at: str | None = None

    @property
    def hash(self) -> str:
        """The content hash of ``content``."""
        return content_hash(self.content)


class HealthChecked:
    """``health`` and ``available`` for a backend that keeps its reachability check in ``_health``."""

    _health: HealthCheck

    @property
    def health(self) -> HealthCheck:
        return self._health

    def available(self, force: bool = False) -> bool:
        return self._health.check(force=force)


@runtime_checkable
class Backend(Protocol):
    """An external memory service, seen synchronously by the router and sync."""

    name: str
    max_content: int | None

    @property
    def endpoint(self) -> str:
        """Where the service is (a URL or a command line), for ``status``."""
        ...

    @property
    def health(self) -> HealthCheck:
        """The cached reachability check behind ``available``."""
        ...

    def available(self, force: bool = False) -> bool:
        """Whether the service looks reachable; cached, ``force`` re-checks now."""
        ...

    def search(self, query: str, limit: int = 10) -> list[ExternalHit]:
        """The best ``limit`` memories for ``query``, best first."""
        ...

    def upsert(self, draft: MemoryDraft, remote_id: str | None = None) -> str:
        """Create a memory (``remote_id=None``) or update that one; return its remote id."""
        ...

    def mark_obsolete(self, remote_id: str, reason: str, superseded_by: str | None = None) -> None:
        """Soft-delete a remote memory, saying why and what replaces it."""
        ...

    def get(self, remote_id: str) -> RemoteMemory:
        """One remote memory by id, obsolete ones included; ``NotFound`` if absent."""
        ...

    def close(self) -> None:
        """Release connections and processes; the backend may reconnect on next use."""
        ...


@runtime_checkable
class SupportsLinks(Protocol):
    """Optional ability: link memories together (used for split, multi-part memories)."""

    def link(self, remote_id: str, related_ids: Sequence[str]) -> None:
        """Link ``remote_id`` to every id in ``related_ids`` (both directions where the service does)."""
        ...


@runtime_checkable
class SupportsInventory(Protocol):
    """Optional ability: say in one cheap call what the service holds.

    Sync compares it with its mapping on every run, so a copy the service lost
    (its data deleted, an older backup restored, a write that never landed) is
    sent again instead of being trusted; ``validate --remote`` reads it instead
    of fetching every copy.
    """

    def inventory(self) -> dict[str, str]:
        """Every remote memory that is not obsolete: remote id -> content hash of what it holds."""
        ...


@runtime_checkable
class SupportsListing(Protocol):
    """Optional ability: list the ids the service holds, many to a call.

    ``validate --remote`` reads the listing instead of fetching every copy. A
    listing is a hint, not the truth: an id it does not show is still fetched
    before it is called missing, so a listing that raced a write never reports
    a copy gone that is there.
    """

    def live_ids(self, most_calls: int) -> set[str] | None:
        """The ids of the remote memories that are not obsolete; None when listing them would take more than
        ``most_calls`` calls (the service holds many more memories than the caller asks about)."""
        ...


def upsert_parts(
    backend: Backend,
    draft: MemoryDraft,
    parts: Sequence[str],
    existing_ids: Sequence[str] = (),
) -> list[str]:
    """Write one memory as several linked parts; return the parts' remote ids in order.

    ``parts`` is the content already split (see ``split_content``). Part *i*
    reuses ``existing_ids[i]`` when there is one (an update), else it is
    created; parts left over from a longer earlier version are marked obsolete.
    Titles get a `` (part i/n)`` suffix when there is more than one part. The
    first part is linked to every other one when the backend ``SupportsLinks``.
    """
    if not parts:
        raise ValueError("upsert_parts needs at least one part")
    total = len(parts)
    ids: list[str] = []
    for index, part in enumerate(parts):
        title = draft.title if total == 1 else _part_title(draft.title, index + 1, total)
        part_draft = replace(draft, title=title, content=part)
        previous = existing_ids[index] if index < len(existing_ids) else None
        ids.append(backend.upsert(part_draft, previous))
    for stale in existing_ids[total:]:
        backend.mark_obsolete(stale, reason=f"memory now has {total} part(s)", superseded_by=ids[0])
    if total > 1 and isinstance(backend, SupportsLinks):
        backend.link(ids[0], ids[1:])
    return ids


def backend_status(backend: Backend) -> dict[str, Any]:
    """What ``memrouter status`` shows for one backend, from the health cache (no probe).

    ``ok`` is ``None`` until something was checked; ``age_s`` is how old the
    cached answer is and ``error`` the latest failure still cached.
    """
    report = backend.health.report()
    return {
        "name": backend.name,
        "endpoint": backend.endpoint,
        "ok": report.ok,
        "checked": report.target,
        "age_s": report.age_s,
        "ttl_s": report.ttl_s,
        "error": report.error,
        "max_content": backend.max_content,
        "supports_links": isinstance(backend, SupportsLinks),
        "supports_inventory": isinstance(backend, SupportsInventory),
    }


def _part_title(title: str, number: int, total: int, limit: int = 200) -> str:
    """``title (part n/m)``, shortening the title so the whole fits ``limit`` characters."""
    suffix = f" (part {number}/{total})"
    return title[: max(1, limit - len(suffix))].rstrip() + suffix
