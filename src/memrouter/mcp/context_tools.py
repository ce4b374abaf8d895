"""The MCP face of context assembly: the ``assemble_context`` tool and the ``memory://context`` resource."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations

from memrouter.mcp.service import MemoryService

__all__ = ["context_resource", "context_tools"]

Register = Callable[..., Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]]


def context_tools(
    tool: Register, run: Callable[[Callable[[], dict[str, Any]]], CallToolResult], read: ToolAnnotations,
    service: MemoryService,
) -> None:  # fmt: skip
    """Register ``assemble_context`` on ``tool``."""

    @tool(read, structured=False)
    def assemble_context(
        query: str | None = None,
        task: str | None = None,
        max_tokens: int = 2000,
        channels: list[str] | None = None,
        as_of: str | None = None,
        format: Literal["xml", "markdown", "json"] = "xml",
    ) -> CallToolResult:
        """The memories you need for a query or task in a token budget: conventions, task, recent changes, knowledge. Call at session start."""

        def body() -> dict[str, Any]:
            built = service.router.assemble_context(
                query, task, max_tokens, channels=channels, as_of=as_of, format=format
            )
            return {"context": built.rendered, "tokens": built.tokens, "max_tokens": built.max_tokens}

        return run(body)


def context_resource(server: MCPServer, resource: Callable[[Callable[[], str]], str], service: MemoryService) -> None:
    """Register ``memory://context``: the context for the session's task (2,000 tokens, XML)."""

    @server.resource(
        "memory://context",
        mime_type="application/xml",
        description="The project's memory context for the current task.",
    )
    def context() -> str:
        return resource(lambda: service.router.assemble_context().rendered)
