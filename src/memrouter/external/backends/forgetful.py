"""Forgetful (``forgetful-ai``) as an external memory backend, over MCP.

Forgetful exposes three meta-tools: ``discover_forgetful_tools``,
``how_to_use_forgetful_tool`` and ``execute_forgetful_tool {tool_name,
arguments}``; the memory tools (``create_memory``, ``query_memory``,
``update_memory``, ``get_memory``, ``mark_memory_obsolete``,
``link_memories``, ...) are reached through the last one. Results come as
structured content; failures are tool errors whose text reads ``Failed to
execute '<tool>': <message>``. Every reply is read through the pydantic
models of ``forgetful_schema``, which the fake server checks its replies
against too; a reply that breaks them is a ``BackendContractError``.

Two facts of the real server shape this module:

- ``query_memory`` lists ``primary_memories`` by importance, not by
  relevance, with one ``{memory_id, similarity, rerank_score}`` per memory in
  ``scores``; ``search`` re-ranks by that similarity.
- content is limited to 2,000 characters (title 200, context 500, at most 10
  keywords and 10 tags, importance 1-10). ``upsert`` clips what can be
  clipped without losing meaning (title, context, lists, importance) and
  refuses over-long content with ``InvalidInput``: split it first with
  ``split_content`` and write the parts with ``upsert_parts``.

Configuration (``ForgetfulConfig.from_mapping``), one of:

- ``url = "http://localhost:8020/mcp"`` (streamable HTTP), with optional
  ``headers`` and ``token`` (sent as ``Authorization: Bearer <token>``);
- ``command = ["forgetful"]`` (or a string, split like a shell would), with
  optional ``env`` and ``cwd``: the server is started on first use and
  spoken to over stdio; ``env`` is where the server's own settings go (its
  database path, its embeddings endpoint such as ``EMBEDDING_PROVIDER`` and
  ``OPENAI_BASE_URL``).

plus ``timeout`` (seconds per call, default 10), ``connect_timeout``
(seconds to start and handshake, default 30: the real server takes about
10 s to start over stdio), ``name`` (default ``forgetful``), ``protocol``
(``legacy``, the initialize handshake Forgetful 0.6.0 speaks, or ``auto``,
the SDK's probe for the 2026 protocol first), ``health_ttl`` (seconds,
default 30) and ``query_context`` (the ``query_context`` sent with every
search).

Health: for a URL, a TCP connect to its host and port (500 ms, cached 30 s);
for a command, that the command exists (the process starts on first use).
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from memrouter.core.errors import (
    BackendContractError,
    BackendUnavailable,
    ConfigError,
    InvalidInput,
    NotFound,
)
from memrouter.external.backends.base import ExternalHit, MemoryDraft, RemoteMemory
from memrouter.external.backends.forgetful_limits import CONTENT_LIMIT, CONTEXT_LIMIT, LIST_LIMIT, TITLE_LIMIT
from memrouter.external.backends.health import DEFAULT_TTL_S, HealthCheck, host_port
from memrouter.external.backends.split import split_content
from memrouter.store.parse import content_hash

if TYPE_CHECKING:
    from memrouter.external.backends._mcp import McpSession


__all__ = [
    "CONTENT_LIMIT",
    "CONTEXT_LIMIT",
    "LIST_LIMIT",
    "TITLE_LIMIT",
    "ForgetfulBackend",
    "ForgetfulConfig",
    "split_content",
]

MAX_K = 20
# ``get_recent_memories`` returns at most this many memories a call (the real server's cap).
PAGE = 100

EXECUTE_TOOL = "execute_forgetful_tool"
META_TOOLS = ("discover_forgetful_tools", "how_to_use_forgetful_tool", EXECUTE_TOOL)


@dataclass(frozen=True, slots=True)
class ForgetfulConfig:
    """How to reach one Forgetful server: exactly one of ``url`` and ``command``."""

    url: str | None = None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    token: str | None = None
    timeout: float = 10.0
    connect_timeout: float = 30.0
    name: str = "forgetful"
    protocol: str = "legacy"
    health_ttl: float = DEFAULT_TTL_S
    query_context: str = "memrouter search for relevant project memories"

    def __post_init__(self) -> None:
        if (self.url is None) == (not self.command):
            raise ConfigError("forgetful: give exactly one of 'url' and 'command'")
        if self.url is not None:
            host_port(self.url)
        if self.timeout <= 0 or self.connect_timeout <= 0:
            raise ConfigError("forgetful: 'timeout' and 'connect_timeout' must be positive")
        if self.protocol not in ("auto", "legacy"):
            raise ConfigError("forgetful: 'protocol' must be 'auto' or 'legacy'")

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> ForgetfulConfig:
        """Read a configuration section (see the module docstring); unknown keys are errors."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ConfigError(f"forgetful: unknown setting(s): {', '.join(unknown)}")
        values = dict(config)
        command = values.get("command")
        if isinstance(command, str):
            values["command"] = tuple(shlex.split(command))
        elif command is not None:
            values["command"] = tuple(str(part) for part in command)
        for key in ("env", "headers"):
            if key in values:
                values[key] = {str(k): str(v) for k, v in dict(values[key] or {}).items()}
        for key in ("timeout", "connect_timeout", "health_ttl"):
            if key in values:
                try:
                    values[key] = float(values[key])
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"forgetful: {key!r} must be a number") from exc
        return cls(**values)

    @property
    def endpoint(self) -> str:
        """The URL, or the command line, for ``status``."""
        return self.url if self.url is not None else shlex.join(self.command)


class ForgetfulBackend:
    """A Forgetful server reached over MCP, used synchronously (see the module docstring).

    Nothing connects until the first call; the MCP session then stays open
    and is re-opened after a failure. ``clock`` drives the health cache.
    """

    max_content: int | None = CONTENT_LIMIT

    def __init__(self, config: ForgetfulConfig, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.name = config.name
        if config.url is not None:
            self._health = HealthCheck.for_url(config.url, ttl=config.health_ttl, clock=clock)
        else:
            self._health = HealthCheck.for_command(
                config.command[0], cwd=config.cwd, ttl=config.health_ttl, clock=clock
            )
        self._session: McpSession | None = None
        self._errlog: TextIO | None = None
        self._open_lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ForgetfulBackend:
        """Build from a configuration mapping (the registry's entry point)."""
        return cls(ForgetfulConfig.from_mapping(config))

    def __enter__(self) -> ForgetfulBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        """The URL or command line of the server."""
        return self.config.endpoint

    @property
    def health(self) -> HealthCheck:
        """The cached reachability check (TCP connect for a URL, command lookup for stdio)."""
        return self._health

    @property
    def connects(self) -> int:
        """How many MCP connections were opened so far (reuse and reconnection)."""
        return 0 if self._session is None else self._session.connects

    def available(self, force: bool = False) -> bool:
        """Whether the server looks reachable, from the health cache unless ``force``."""
        return self._health.check(force)

    # -- the Backend protocol ----------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[ExternalHit]:
        """The best ``limit`` (at most 20) memories by the server's similarity, best first.

        Obsolete memories are never returned. Ranks follow similarity, not the
        server's importance-ordered list.
        """
        if limit < 1 or not query.strip():
            return []
        data = self.execute(
            "query_memory",
            {
                "query": query,
                "query_context": self.config.query_context,
                "k": min(limit, MAX_K),
                "include_links": False,
            },
        )
        from memrouter.external.backends import forgetful_schema as schema  # pydantic loads with the first reply

        reply = schema.parse_reply(schema.QueryResult, data, tool="query_memory", source=self.name)
        by_id = {str(score.memory_id): score for score in reply.scores or ()}

        def similarity(remote_id: str) -> float:
            score = by_id.get(remote_id)
            return 0.0 if score is None or score.similarity is None else score.similarity

        records = [memory.to_remote() for memory in reply.primary_memories]
        ranked = sorted((r for r in records if not r.is_obsolete), key=lambda r: similarity(r.id), reverse=True)
        ranked = ranked[:limit]
        return [
            ExternalHit(
                backend=self.name,
                remote_id=r.id,
                title=r.title,
                content=r.content,
                score=similarity(r.id),
                rank=rank,
                hash=content_hash(r.content),
                tags=r.tags,
                importance=r.importance,
                rerank_score=None if r.id not in by_id else by_id[r.id].rerank_score,
                context=r.context,
                source_repo=r.source_repo,
            )
            for rank, r in enumerate(ranked, start=1)
        ]

    def upsert(self, draft: MemoryDraft, remote_id: str | None = None) -> str:
        """Create a memory, or update ``remote_id``; return the remote id.

        Content over 2,000 characters is refused with ``InvalidInput`` (split
        it); other fields are clipped to Forgetful's limits.
        """
        if not draft.content.strip():
            raise InvalidInput(f"{self.name}: memory content is empty")
        if len(draft.content) > CONTENT_LIMIT:
            raise InvalidInput(
                f"{self.name}: content is {len(draft.content)} characters, the limit is"
                f" {CONTENT_LIMIT}; split it with split_content"
            )
        arguments = _draft_arguments(draft)
        from memrouter.external.backends import forgetful_schema as schema

        if remote_id is None:
            data = self.execute("create_memory", arguments)
            return str(schema.parse_reply(schema.CreateResult, data, tool="create_memory", source=self.name).id)
        if not arguments["context"]:
            del arguments["context"]  # update_memory refuses an empty context (it cannot be cleared)
        data = self.execute("update_memory", {"memory_id": _int_id(remote_id), **arguments})
        updated = schema.parse_reply(schema.UpdateResult, data, tool="update_memory", source=self.name)
        return remote_id if updated.id is None else str(updated.id)

    def mark_obsolete(self, remote_id: str, reason: str, superseded_by: str | None = None) -> None:
        """Soft-delete ``remote_id`` (kept, but left out of searches)."""
        arguments: dict[str, Any] = {"memory_id": _int_id(remote_id), "reason": reason}
        if superseded_by is not None:
            arguments["superseded_by"] = _int_id(superseded_by)
        data = self.execute("mark_memory_obsolete", arguments)
        from memrouter.external.backends import forgetful_schema as schema

        if not schema.parse_reply(schema.SuccessResult, data, tool="mark_memory_obsolete", source=self.name).success:
            raise BackendContractError(f"{self.name}: mark_memory_obsolete did not succeed: {data!r}")

    def get(self, remote_id: str) -> RemoteMemory:
        """One memory by id, obsolete or not; ``NotFound`` when the server has none."""
        data = self.execute("get_memory", {"memory_id": _int_id(remote_id)})
        from memrouter.external.backends import forgetful_schema as schema

        return schema.parse_reply(schema.ForgetfulMemory, data, tool="get_memory", source=self.name).to_remote()

    def live_ids(self, most_calls: int) -> set[str] | None:
        """The ids of every memory not obsolete, paging through ``get_recent_memories`` (``SupportsListing``).

        Obsolete memories are listed too and left out here: the list then only grows at its newest end while
        it is read, so a write meanwhile shows a memory twice, never hides one. None when the server holds
        more than ``most_calls`` pages.
        """
        from memrouter.external.backends import forgetful_schema as schema

        live: set[str] = set()
        offset = calls = 0
        while True:
            data = self.execute("get_recent_memories", {"limit": PAGE, "offset": offset, "include_obsolete": True})
            page = schema.parse_reply(schema.RecentMemories, data, tool="get_recent_memories", source=self.name)
            calls += 1
            total = page.total_count
            if calls == 1 and total is not None and -(-total // PAGE) > most_calls:
                return None
            live.update(str(memory.id) for memory in page.memories if not memory.is_obsolete)
            offset += len(page.memories)
            if len(page.memories) < PAGE or (total is not None and offset >= total):
                return live
            if calls >= most_calls:
                return None

    def link(self, remote_id: str, related_ids: Sequence[str]) -> None:
        """Link ``remote_id`` to each of ``related_ids`` (Forgetful links both ways)."""
        if not related_ids:
            return
        self.execute(
            "link_memories",
            {"memory_id": _int_id(remote_id), "related_ids": [_int_id(r) for r in related_ids]},
        )

    def close(self) -> None:
        """Close the MCP session (stopping a stdio server); a later call reconnects."""
        session, self._session = self._session, None
        if session is not None:
            session.close()
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    # -- lower level -------------------------------------------------------

    def execute(self, tool_name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run one Forgetful tool through ``execute_forgetful_tool``; return its JSON object."""
        return self.call_meta(EXECUTE_TOOL, {"tool_name": tool_name, "arguments": dict(arguments)})

    def call_meta(self, meta_tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Call one of the three meta-tools and return its structured result."""
        session = self._open()
        try:
            result = session.call_tool(meta_tool, arguments)
        except BackendUnavailable as exc:
            self._health.record_failure(str(exc))
            raise
        self._health.record_success()
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise _tool_error(self.name, text or "tool error without a message")
        data: Any = result.structured_content
        if data is None:
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise BackendContractError(f"{self.name}: {meta_tool} returned no JSON object") from exc
        if isinstance(data, dict) and set(data) == {"result"} and isinstance(data["result"], dict):
            data = data["result"]
        if not isinstance(data, dict):
            raise BackendContractError(f"{self.name}: {meta_tool} returned {type(data).__name__}, not an object")
        return data

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of a stdio server's stderr (empty for HTTP), for diagnostics."""
        if self._errlog is None:
            return ""
        self._errlog.flush()
        self._errlog.seek(0, os.SEEK_END)
        size = self._errlog.tell()
        self._errlog.seek(max(0, size - limit))
        return self._errlog.read()

    def _open(self) -> McpSession:
        with self._open_lock:
            return self._session or self._new_session()

    def _new_session(self) -> McpSession:
        """Build the MCP session for the configured transport (connects on first call)."""
        try:
            from memrouter.external.backends import _mcp
        except ImportError as exc:  # the SDK is a dependency; guard a broken install
            from memrouter.core.errors import BackendNotInstalled

            raise BackendNotInstalled(self.name, "pip install 'mcp>=2.3,<3'") from exc
        config = self.config
        if config.url is not None:
            headers = dict(config.headers)
            if config.token:
                headers["Authorization"] = f"Bearer {config.token}"
            factory = _mcp.http_client_factory(
                config.url,
                headers=headers,
                timeout=max(config.timeout, config.connect_timeout),
                mode=config.protocol,
            )
        else:
            if self._errlog is None:
                self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8")
            factory = _mcp.stdio_client_factory(
                list(config.command),
                env=config.env,
                cwd=config.cwd,
                errlog=self._errlog,
                mode=config.protocol,
            )
        self._session = _mcp.McpSession(
            factory, label=self.name, timeout=config.timeout, connect_timeout=config.connect_timeout
        )
        return self._session


def _draft_arguments(draft: MemoryDraft) -> dict[str, Any]:
    title = draft.title.strip() or draft.content.strip().splitlines()[0]
    if len(title) > TITLE_LIMIT:
        title = title[: TITLE_LIMIT - 1].rstrip() + "\u2026"
    context = draft.context
    if len(context) > CONTEXT_LIMIT:
        context = context[: CONTEXT_LIMIT - 1].rstrip() + "\u2026"
    arguments: dict[str, Any] = {
        "title": title,
        "content": draft.content,
        "context": context,
        "keywords": list(_unique(draft.keywords))[:LIST_LIMIT],
        "tags": list(_unique(draft.tags))[:LIST_LIMIT],
        "importance": min(10, max(1, int(draft.importance))),
        "encoding_agent": "memrouter",
    }
    if draft.source_repo is not None:
        arguments["source_repo"] = draft.source_repo
    if draft.source_files:
        arguments["source_files"] = list(draft.source_files)
    if draft.source_url is not None:
        arguments["source_url"] = draft.source_url
    if draft.confidence is not None:
        arguments["confidence"] = draft.confidence
    return arguments


def _unique(values: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        if value.strip():
            seen.setdefault(value.strip(), None)
    return list(seen)


def _tool_error(name: str, text: str) -> Exception:
    """A Forgetful tool error as a memrouter error: not found, transient, or contract."""
    message = f"{name}: {text}"
    lowered = text.lower()
    if "not found" in lowered and "memory with id" in lowered:
        return NotFound(message)
    if "internal_error" in lowered or "connection error" in lowered or "unavailable" in lowered:
        return BackendUnavailable(message)
    return BackendContractError(message)


def _int_id(remote_id: str) -> int:
    try:
        return int(remote_id)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"forgetful ids are integers, not {remote_id!r}") from exc
