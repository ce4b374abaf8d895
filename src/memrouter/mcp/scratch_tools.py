"""The MCP tools of the short-term channel: one owner's scratchpad (``memrouter.ops.scratch``).

The owner is the agent the server is pinned to (``memrouter serve --agent``),
else the MCP session itself (``scratch_owner``): a session's notes are its own
and vanish with their time to live.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations

from memrouter.core.errors import InvalidInput
from memrouter.mcp.service import MemoryService

__all__ = ["scratch_owner", "scratch_tools"]


def scratch_owner(ctx: Context[Any, Any] | None, pinned_agent: str | None) -> str | None:
    """Whose scratchpad a call uses: the pinned agent, else this MCP session.

    Over HTTP the session is the ``mcp-session-id`` header; over stdio a server
    process serves one client, so the session is the client's name in this
    process. None outside a request.
    """
    if pinned_agent is not None:
        return pinned_agent
    if ctx is None:
        return None
    headers = getattr(ctx, "headers", None) or {}
    session_id = headers.get("mcp-session-id") if hasattr(headers, "get") else None
    if isinstance(session_id, str) and session_id:
        return f"session-{session_id}"
    try:
        info = getattr(ctx.session.client_params, "client_info", None)
    except (AttributeError, ValueError, LookupError):  # a direct call, outside a request
        return None
    name = getattr(info, "name", None) or "client"
    return f"client-{name}-{os.getpid()}"


Register = Callable[..., Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]]


def scratch_tools(
    tool: Register,
    run: Callable[[Callable[[], dict[str, Any]]], CallToolResult],
    write: ToolAnnotations,
    read: ToolAnnotations,
    service: MemoryService,
    pinned_agent: str | None,
) -> None:
    """Register ``scratchpad_write``, ``scratchpad_read`` and ``scratchpad_clear`` on ``tool``."""
    pad = service.router.scratchpad

    def owner_of(ctx: Context[Any, Any] | None) -> str:

        owner = scratch_owner(ctx, pinned_agent)
        if owner is None:
            raise InvalidInput("a scratchpad belongs to an MCP session or a pinned agent; none is known here")
        return owner

    @tool(write, structured=False)
    def scratchpad_write(
        name: str, content: str, ttl_seconds: float | None = None, ctx: Context[Any, Any] | None = None
    ) -> CallToolResult:
        """A note for this session alone: never a file, not shared, gone after ttl_seconds (default 2 h); search_memory finds it."""
        return run(lambda: pad().write(owner_of(ctx), name, content, ttl=ttl_seconds).to_dict())

    @tool(read, structured=False)
    def scratchpad_read(name: str | None = None, ctx: Context[Any, Any] | None = None) -> CallToolResult:
        """This session's live scratchpad notes (or one by name)."""
        return run(lambda: {"notes": [note.to_dict() for note in pad().read(owner_of(ctx), name)]})

    @tool(write, structured=False)
    def scratchpad_clear(name: str | None = None, ctx: Context[Any, Any] | None = None) -> CallToolResult:
        """Remove this session's scratchpad notes (or one by name)."""
        return run(lambda: {"cleared": pad().clear(owner_of(ctx), name)})
