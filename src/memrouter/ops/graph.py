"""The knowledge graph's calls: entities, related memories, paths, neighbours, stats, export.

A *name* given to these calls is a memory name, or anything the graph knows
an entity by: ``ADR-012``, ``#123``, ``owner/repo#123``, a commit hash, a
path, a title or alias (case and punctuation folded). ``NotFound`` when the
graph knows nothing by that name. ``as_of`` (``YYYY-MM-DD``) keeps only
edges written in memories valid on that day.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.model import Entity, GraphPath, Related, Relation
from memrouter.index.graph.export import export, stats

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memrouter.index.graph.view import GraphView, Node
    from memrouter.ops.workspace import Workspace

__all__ = ["get_entity", "graph_export", "graph_stats", "neighbors", "path", "related"]

MAX_DEPTH = 4


def _graph_view(ws: Workspace) -> GraphView:
    """The graph of a fresh index (the project's rows in PostgreSQL with ``[index] url``)."""
    ws.ensure_fresh()
    return ws.reader.graph_view()


def _node(view: GraphView, name: str) -> Node:
    if not isinstance(name, str) or not name.strip() or len(name) > 1000:
        raise InvalidInput("a graph name must be non-empty text of at most 1000 characters")
    node = view.resolve(name.strip())
    if node is None:
        raise NotFound(f"the graph knows no memory or entity named {name!r}")
    return node


def get_entity(ws: Workspace, name: str, include_relations: bool = True, *, as_of: str | None = None) -> Entity:
    """The memory or entity ``name``, with its relations in and out when ``include_relations``."""

    def read() -> Entity:
        view = _graph_view(ws)
        node = _node(view, name)
        relations: tuple[Relation, ...] = ()
        if include_relations:
            relations = tuple(view.relation(step) for step in view.steps(node, as_of=as_of))
        key = node if isinstance(node, str) else f"memory:{view.label(node)}"
        holders = view.key_memories.get(node, []) if isinstance(node, str) else [node]
        return Entity(view.label(node), view.kind(node), key, tuple(view.label(m) for m in holders), relations)

    return ws.index.indexed(read)


def neighbors(
    ws: Workspace, name: str, *, types: Iterable[str] | None = None, as_of: str | None = None
) -> builtins.list[Relation]:
    """The edges into and out of ``name`` (only ``types`` when given)."""

    def read() -> builtins.list[Relation]:
        view = _graph_view(ws)
        return [view.relation(step) for step in view.steps(_node(view, name), _types(types), as_of)]

    return ws.index.indexed(read)


def related(
    ws: Workspace, name: str, depth: int = 2, types: Iterable[str] | None = None, *, as_of: str | None = None
) -> builtins.list[Related]:
    """Every memory and entity within ``depth`` hops of ``name`` (1 to 4), nearest first."""
    if not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidInput(f"depth must be a whole number from 1 to {MAX_DEPTH}")

    def read() -> builtins.list[Related]:
        view = _graph_view(ws)
        found = view.walk(_node(view, name), depth, _types(types), as_of)
        return [
            Related(view.label(node), view.kind(node), len(steps), tuple(view.relation(s) for s in steps))
            for node, steps in found.items()
        ]

    return ws.index.indexed(read)


def path(ws: Workspace, source: str, target: str) -> GraphPath:
    """The shortest typed path from ``source`` to ``target`` (edges followed both ways)."""

    def read() -> GraphPath:
        view = _graph_view(ws)
        start, end = _node(view, source), _node(view, target)
        steps = view.shortest(start, end)
        relations = tuple(view.relation(s) for s in steps) if steps is not None else ()
        return GraphPath(view.label(start), view.label(end), steps is not None, relations)

    return ws.index.indexed(read)


def graph_stats(ws: Workspace) -> dict[str, Any]:
    """Counts by edge type and entity kind, dangling references and orphan memories, JSON-ready."""

    return ws.index.indexed(lambda: stats(_graph_view(ws)))


def graph_export(ws: Workspace, fmt: str = "json") -> str:
    """The whole graph as ``json``, ``graphml`` or ``dot`` text."""

    return ws.index.indexed(lambda: export(_graph_view(ws), fmt))


def _types(types: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if types is None:
        return None
    return (types,) if isinstance(types, str) else tuple(types)
