"""The anchor tools: ``verify_memory`` (check one memory against the code; ``accept`` stamps it verified) and
``stale_memories`` (the memories whose anchored code changed or is gone)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_types import CallToolResult, ToolAnnotations

from memrouter.mcp.service import MemoryService

__all__ = ["ANCHOR_TOOLS", "anchor_tools"]

ANCHOR_TOOLS = ("verify_memory", "stale_memories")

Register = Callable[..., Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]]


def anchor_tools(
    tool: Register,
    run: Callable[[Callable[[], dict[str, Any]]], CallToolResult],
    write: ToolAnnotations,
    read: ToolAnnotations,
    service: MemoryService,
) -> None:
    """Register ``verify_memory`` and ``stale_memories`` on ``tool``."""

    @tool(write, structured=False)
    def verify_memory(memory_name: str, accept: bool = False) -> CallToolResult:
        """Check a memory against the code it names: fresh, stale (commits, diff) or broken. accept=true once you checked it: stamps verified: <HEAD commit>."""
        return run(lambda: service.verify_memory(memory_name, accept))

    @tool(read, structured=False)
    def stale_memories(limit: int = 20) -> CallToolResult:
        """Memories whose code changed (stale) or is gone (broken) since written or verified, worst first, with why. Check them before trusting them."""
        return run(lambda: service.stale_memories(limit))
