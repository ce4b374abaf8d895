"""The MCP face of context assembly: the ``assemble_context`` tool and the ``memory://context`` resource.

The tool answers structured content by default (the blocks and their items as
JSON values); XML or markdown, one text for a prompt, only when the client asks.
"""

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
        format: Literal["json", "xml", "markdown"] = "json",
    ) -> CallToolResult:
        """Call first: what a task needs from memory (conventions, the task, recent changes, knowledge) within max_tokens. format xml or markdown: one text to paste into a prompt."""

        def body() -> dict[str, Any]:
            built = service.router.assemble_context(
                query, task, max_tokens, channels=channels, as_of=as_of, format=format
            )
            if format == "json":  # structured: the blocks as JSON values, never JSON inside a string
                return built.to_dict()
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
