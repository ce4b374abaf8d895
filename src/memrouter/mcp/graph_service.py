"""What the MCP graph tools do, in plain Python over one Router (no MCP SDK here).

Each call answers with a JSON-ready dict built from the Router's frozen
records; names and labels are data, never markup. Errors are the library's
(``NotFound``, ``InvalidInput``), turned into tool errors by the server.
"""

from __future__ import annotations

from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.router import Router

__all__ = ["GraphService", "MAX_TYPES"]

MAX_TYPES = 20


class GraphService:
    """The knowledge graph's tools and resource over ``router``."""

    def __init__(self, router: Router) -> None:
        self.router = router

    def get_entity(self, name: str, include_relations: bool = True) -> dict[str, Any]:
        """The memory or entity ``name`` (``ADR-012``, ``#123``, a path, a title) with its edges."""
        return self.router.get_entity(name, include_relations=include_relations).to_dict()

    def related(self, name: str, depth: int = 2, types: list[str] | None = None) -> dict[str, Any]:
        """Memories and entities within ``depth`` hops of ``name``, nearest first, with the edges that reach them."""
        if types is not None and (len(types) > MAX_TYPES or not all(isinstance(t, str) and t for t in types)):
            raise InvalidInput(f"types must be at most {MAX_TYPES} non-empty edge type names")
        found = self.router.related(name, depth=depth, types=types or None)
        return {"name": name, "depth": depth, "related": [item.to_dict() for item in found]}

    def path(self, source: str, target: str) -> dict[str, Any]:
        """The shortest typed path between two names (``found`` false when there is none)."""
        return self.router.path(source, target).to_dict()
