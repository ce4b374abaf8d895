"""Who an MCP client is, for provenance and the audit log; the review queue's tools and the janitor's report.

Every request runs as ``agent:<id>`` (``memrouter.ops.audit.acting_as``): the
agent the server is pinned to (``memrouter serve --agent``), else the name
the client gave in its ``initialize`` request (``clientInfo.name``), else
``agent:unknown``. An agent is never a person: it may approve another
agent's memory, never its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult, ToolAnnotations

from memrouter.core.errors import InvalidInput
from memrouter.mcp.service import MemoryService
from memrouter.ops.audit import acting_as, current_actor

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

__all__ = ["acting_client", "client_actor", "review_tools"]

Register = Callable[..., Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]]


def client_actor(session: Any, pinned_agent: str | None) -> str:
    """``agent:<id>`` for the client of ``session`` (see the module docstring)."""
    if pinned_agent is not None:
        return f"agent:{pinned_agent}"
    try:
        info = getattr(session.client_params, "client_info", None)
    except (AttributeError, ValueError, LookupError):  # no session (a direct call)
        info = None
    name = getattr(info, "name", None)
    return f"agent:{name}" if isinstance(name, str) and name.strip() else "agent:unknown"


def acting_client(pinned_agent: str | None) -> ServerMiddleware[Any]:
    """Server middleware: the request's writes are the client agent's (``acting_as``)."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        with acting_as(client_actor(getattr(ctx, "session", None), pinned_agent)):
            return await call_next(ctx)

    return middleware


def review_tools(
    tool: Register,
    run: Callable[[Callable[[], dict[str, Any]]], CallToolResult],
    write: ToolAnnotations,
    read: ToolAnnotations,
    service: MemoryService,
) -> None:
    """Register the review queue's tools and ``janitor_report`` on ``tool``.

    The janitor's report is read-only here: applying it marks memories obsolete
    across the project, which is a person's call (``memrouter janitor --apply``).
    """
    router = service.router

    def reviewer() -> str:
        actor = current_actor()
        if actor is None:
            raise InvalidInput("a review must say who makes it; none is known outside an MCP request")
        return actor

    @tool(read, structured=False)
    def get_pending_memories() -> CallToolResult:
        """Memories held pending review (never in search results): name, title, kind. Read one with get_memory."""
        return run(lambda: {"memories": [_summary(item.to_dict()) for item in router.pending()]})

    @tool(write, structured=False)
    def approve_pending_memory(
        memory_name: str, reason: str | None = None, expected_hash: str | None = None
    ) -> CallToolResult:
        """Make a pending memory active, verified by you. Refused for a memory you wrote yourself."""
        return run(
            lambda: _memory(router.approve(memory_name, actor=reviewer(), reason=reason, expected_hash=expected_hash))
        )

    @tool(write, structured=False)
    def reject_pending_memory(memory_name: str, reason: str, expected_hash: str | None = None) -> CallToolResult:
        """Delete a pending memory that is wrong or unsupported; the reason is kept in the audit log."""
        return run(
            lambda: {
                "rejected": router.reject(
                    memory_name, actor=reviewer(), reason=reason, expected_hash=expected_hash
                ).name
            }
        )

    @tool(read, structured=False)
    def janitor_report(limit: int = 50) -> CallToolResult:
        """Proposed consolidations: duplicates, contradictions, expired memories, idle team workflows. Read-only."""

        def report() -> dict[str, Any]:
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
                raise InvalidInput(f"limit must be a whole number from 1 to 1000 (got {limit!r})")
            data = router.janitor(apply=False).to_dict()
            shown = data["proposals"][:limit]
            return {
                "memories": data["memories"], "counts": data["counts"], "proposals": shown,
                "more_proposals": len(data["proposals"]) - len(shown), "notices": data["notices"],
                "team": data["team"], "apply": "a person applies these with `memrouter janitor --apply`",
            }  # fmt: skip

        return run(report)


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    return {key: data[key] for key in ("name", "title", "kind", "channel", "hash")}


def _memory(memory: Any) -> dict[str, Any]:
    data: dict[str, Any] = memory.to_dict(content=False)
    return {key: data[key] for key in ("name", "status", "author", "verified_by", "hash")}
