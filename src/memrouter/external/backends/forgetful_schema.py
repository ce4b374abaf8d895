"""Forgetful's records, as pydantic models shared by the client and the fake server.

``memrouter.external.backends.forgetful`` reads every reply through these models and
``memrouter.testing.forgetful_server`` checks every reply it sends against
them, so the two cannot drift apart. The shapes follow Forgetful 0.6.0 (see
the module docstring of ``forgetful``):

==========================  ==========================================
``create_memory``           ``CreateResult``: ``{id, title, ...}``
``query_memory``            ``QueryResult``: ``primary_memories``,
                            ``linked_memories``, ``scores``, ...
``get_memory``              ``ForgetfulMemory``
``update_memory``           ``UpdateResult`` (the updated memory)
``mark_memory_obsolete``,   ``SuccessResult``: ``{success}``
``unobsolete_memory``,
``unlink_memories``
``link_memories``           ``LinkResult``: ``{linked_memory_ids}``
``get_recent_memories``     ``RecentMemories``: ``{memories, total_count}``
==========================  ==========================================

The real server's replies carry more fields than memrouter reads: unknown
fields are allowed and kept (a memory's land in ``RemoteMemory.extra``).
What memrouter relies on is strict: ids are integers (never strings or
booleans), titles and contents are text, flags are booleans, scores numbers.
``parse_reply`` turns a reply that breaks the schema into
``BackendContractError``. The argument models (``MemoryCreate``,
``MemoryUpdate``) carry Forgetful's limits, which the client clips to.

Importing this module imports pydantic; the client does so only when it
reads its first reply.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from memrouter.core.errors import BackendContractError
from memrouter.external.backends.base import RemoteMemory
from memrouter.external.backends.forgetful_limits import CONTENT_LIMIT, CONTEXT_LIMIT, LIST_LIMIT, TITLE_LIMIT

__all__ = [
    "REPLY_MODELS",
    "CreateResult",
    "ForgetfulMemory",
    "LinkResult",
    "LinkedMemory",
    "MemoryCreate",
    "MemoryUpdate",
    "QueryResult",
    "RecentMemories",
    "Reply",
    "Score",
    "SuccessResult",
    "UpdateResult",
    "parse_reply",
]

ReplyT = TypeVar("ReplyT", bound="Reply")


class Reply(BaseModel):
    """Base of every record Forgetful returns: fields memrouter does not read are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)


class ForgetfulMemory(Reply):
    """One memory, as ``get_memory``, ``update_memory`` and ``query_memory`` return it."""

    id: StrictInt
    title: StrictStr
    content: StrictStr
    context: StrictStr | None = None
    keywords: list[StrictStr] | None = None
    tags: list[StrictStr] | None = None
    importance: int | None = None
    is_obsolete: StrictBool = False
    obsolete_reason: StrictStr | None = None
    superseded_by: StrictInt | None = None
    linked_memory_ids: list[StrictInt] | None = None
    source_repo: StrictStr | None = None
    source_files: list[StrictStr] | None = None
    source_url: StrictStr | None = None

    def to_remote(self) -> RemoteMemory:
        """The backend-neutral record; unknown fields go to ``extra``."""
        return RemoteMemory(
            id=str(self.id),
            title=self.title,
            content=self.content,
            context=self.context or "",
            tags=tuple(self.tags or ()),
            keywords=tuple(self.keywords or ()),
            importance=self.importance,
            is_obsolete=self.is_obsolete,
            obsolete_reason=self.obsolete_reason,
            superseded_by=None if self.superseded_by is None else str(self.superseded_by),
            linked_ids=tuple(str(i) for i in self.linked_memory_ids or ()),
            source_repo=self.source_repo,
            source_files=tuple(self.source_files or ()),
            source_url=self.source_url,
            extra=dict(self.model_extra or {}),
        )


class Score(Reply):
    """One ``query_memory`` score: the similarity of a primary memory (``rerank_score`` if reranking)."""

    memory_id: StrictInt
    similarity: StrictFloat | None = None
    rerank_score: StrictFloat | None = None


class LinkedMemory(Reply):
    """A memory ``query_memory`` adds because a primary memory links to it.

    Only ``memory`` is read; the field naming the primary differs between
    Forgetful versions, so it is kept as an extra.
    """

    memory: ForgetfulMemory


class QueryResult(Reply):
    """``query_memory``: primary memories by importance, their similarity in ``scores``."""

    primary_memories: list[ForgetfulMemory]
    linked_memories: list[LinkedMemory] = Field(default_factory=list)
    scores: list[Score] | None = None


class CreateResult(Reply):
    """``create_memory``: the new memory's id (and title, links, similar memories)."""

    id: StrictInt
    title: StrictStr | None = None


class UpdateResult(Reply):
    """``update_memory``: the updated memory; only its ``id`` is read, when present."""

    id: StrictInt | None = None


class SuccessResult(Reply):
    """``mark_memory_obsolete``, ``unobsolete_memory``, ``unlink_memories``: ``{success}``."""

    success: StrictBool


class LinkResult(Reply):
    """``link_memories``: the links that were created (memrouter does not read it)."""

    linked_memory_ids: list[StrictInt] | None = None


class RecentMemories(Reply):
    """``get_recent_memories``: newest first, one page of them."""

    memories: list[ForgetfulMemory]
    total_count: StrictInt | None = None


REPLY_MODELS: dict[str, type[Reply]] = {
    "create_memory": CreateResult,
    "query_memory": QueryResult,
    "get_memory": ForgetfulMemory,
    "update_memory": UpdateResult,
    "mark_memory_obsolete": SuccessResult,
    "unobsolete_memory": SuccessResult,
    "unlink_memories": SuccessResult,
    "link_memories": LinkResult,
    "get_recent_memories": RecentMemories,
}


def parse_reply(model: type[ReplyT], data: Any, *, tool: str, source: str = "forgetful") -> ReplyT:
    """``data`` read as ``model``; ``BackendContractError`` naming the bad fields otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BackendContractError(
            f"{source}: the {tool} reply does not match Forgetful's schema: {describe(exc)}"
        ) from exc


def describe(error: ValidationError, limit: int = 3) -> str:
    """The first ``limit`` problems of a validation error, one clause each."""
    problems = []
    for item in error.errors()[:limit]:
        where = ".".join(str(part) for part in item["loc"]) or "the reply"
        given = "" if item["type"] == "missing" else f" (got {_short(item.get('input'))})"
        problems.append(f"{where}: {item['msg']}{given}")
    more = error.error_count() - limit
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


class MemoryCreate(BaseModel):
    """Forgetful's ``create_memory`` arguments and limits (the fake server validates with it)."""

    title: str = Field(min_length=1, max_length=TITLE_LIMIT)
    content: str = Field(min_length=1, max_length=CONTENT_LIMIT)
    context: str = Field(max_length=CONTEXT_LIMIT)
    keywords: list[str] = Field(max_length=LIST_LIMIT)
    tags: list[str] = Field(max_length=LIST_LIMIT)
    importance: int = Field(7, ge=1, le=10)
    project_ids: list[int] | None = None
    source_repo: str | None = None
    source_files: list[str] | None = None
    source_url: str | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    encoding_agent: str | None = None
    encoding_version: str | None = None


class MemoryUpdate(BaseModel):
    """Forgetful's ``update_memory`` fields (all optional) and limits."""

    title: str | None = Field(None, min_length=1, max_length=TITLE_LIMIT)
    content: str | None = Field(None, min_length=1, max_length=CONTENT_LIMIT)
    context: str | None = Field(None, min_length=1, max_length=CONTEXT_LIMIT)
    keywords: list[str] | None = Field(None, max_length=LIST_LIMIT)
    tags: list[str] | None = Field(None, max_length=LIST_LIMIT)
    importance: int | None = None
    project_ids: list[int] | None = None
    source_repo: str | None = None
    source_files: list[str] | None = None
    source_url: str | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    encoding_agent: str | None = None
    encoding_version: str | None = None
