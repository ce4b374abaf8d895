"""The knowledge graph as a whole: stats (with what a person can fix) and export formats."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any
from xml.sax.saxutils import quoteattr

from memrouter.core.errors import InvalidInput
from memrouter.index.graph.view import GraphView, Node

__all__ = ["EXPORT_FORMATS", "export", "stats"]

EXPORT_FORMATS = ("json", "graphml", "dot")
# Reference kinds that name a memory: one that names none is dangling.
_MEMORY_KINDS = ("mem",)
_MAX_LISTED = 200


def stats(view: GraphView) -> dict[str, Any]:
    """Counts, dangling references (links to memories that do not exist) and orphans (no edge in or out)."""
    types: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    dangling: list[dict[str, Any]] = []
    for memory, edges in view.out.items():
        for edge in edges:
            types[edge.type] += 1
            kind = edge.target.partition(":")[0]
            resolved = edge.target in view.key_memories
            kinds["memory" if resolved else kind] += 1
            if not resolved and (kind in _MEMORY_KINDS or (kind == "path" and edge.target.endswith(".md"))):
                if edge.type != "about_code":
                    dangling.append({"memory": view.names.get(memory), "line": edge.line, "target": edge.label})
    linked = set(view.out)
    for key, edges in view.into.items():
        if key in view.key_memories and edges:
            linked.update(view.key_memories[key])
    orphans = sorted(name for memory, name in view.names.items() if memory not in linked)
    return {
        "memories": len(view.names),
        "edges": sum(types.values()),
        "edge_types": dict(types.most_common()),
        "targets": dict(kinds.most_common()),
        "entities": sum(1 for key in view.into if key not in view.key_memories),
        "dangling": dangling[:_MAX_LISTED],
        "dangling_count": len(dangling),
        "orphans": orphans[:_MAX_LISTED],
        "orphan_count": len(orphans),
    }


def _edges(view: GraphView) -> list[tuple[Node, str, Node, int]]:
    found: list[tuple[Node, str, Node, int]] = []
    for memory, edges in view.out.items():
        for edge in edges:
            targets: list[Node] = [m for m in view.key_memories.get(edge.target, ()) if m != memory]
            for target in targets or [edge.target]:
                found.append((memory, edge.type, target, edge.line))
    return found


def _node_id(node: Node) -> str:
    return f"m{node}" if isinstance(node, int) else "e:" + node


def export(view: GraphView, fmt: str = "json") -> str:
    """Every node and edge in ``fmt`` (``json``, ``graphml`` or ``dot``)."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput(f"unknown graph format {fmt!r}; use {', '.join(EXPORT_FORMATS)}")
    edges = _edges(view)
    nodes: dict[Node, None] = dict.fromkeys(view.names)
    for source, _, target, _ in edges:
        nodes.setdefault(source)
        nodes.setdefault(target)
    if fmt == "json":
        return json.dumps(
            {
                "nodes": [{"id": _node_id(n), "label": view.label(n), "kind": view.kind(n)} for n in nodes],
                "edges": [
                    {"source": _node_id(s), "type": t, "target": _node_id(d), "line": line} for s, t, d, line in edges
                ],
            },
            ensure_ascii=False,
        )
    if fmt == "graphml":
        lines = [
            '<?xml version="1.0" encoding="UTF-8"?>',
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
            '<key id="label" for="node" attr.name="label" attr.type="string"/>',
            '<key id="kind" for="node" attr.name="kind" attr.type="string"/>',
            '<key id="type" for="edge" attr.name="type" attr.type="string"/>',
            '<graph edgedefault="directed">',
        ]
        for n in nodes:
            lines.append(
                f'<node id={quoteattr(_node_id(n))}><data key="label">{_xml(view.label(n))}</data>'
                f'<data key="kind">{_xml(view.kind(n))}</data></node>'
            )
        for s, t, d, _ in edges:
            lines.append(
                f'<edge source={quoteattr(_node_id(s))} target={quoteattr(_node_id(d))}><data key="type">{_xml(t)}</data></edge>'
            )
        return "\n".join([*lines, "</graph>", "</graphml>"]) + "\n"
    body = [f"  {json.dumps(_node_id(n))} [label={json.dumps(view.label(n))}];" for n in nodes]
    body += [
        f"  {json.dumps(_node_id(s))} -> {json.dumps(_node_id(d))} [label={json.dumps(t)}];" for s, t, d, _ in edges
    ]
    return "digraph memories {\n" + "\n".join(body) + "\n}\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
