"""``memrouter graph``: the knowledge graph's entities, related memories, paths, stats and export."""

from __future__ import annotations

from typing import Any

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state

__all__ = ["graph"]

# The export formats (memrouter.index.graph.export.EXPORT_FORMATS), listed here so --help imports no graph module.
_EXPORT_FORMATS = ("json", "graphml", "dot")


@click.group()
def graph() -> None:
    """The knowledge graph read from the memories' links and mentions."""


def _arrow(relation: dict[str, Any]) -> str:
    where = f"{relation['memory']}:{relation['line']}" if relation["line"] else relation["memory"]
    detail = f" ({relation['detail']})" if relation.get("detail") else ""
    return f"{relation['source']} -{relation['type']}-> {relation['target']}{detail}  [{where}]"


@graph.command()
@click.argument("name")
@click.option("--no-relations", is_flag=True, help="Only the entity, without its edges.")
@click.option("--as-of", metavar="YYYY-MM-DD", help="Only edges written in memories valid on that day.")
@FORMAT
@pass_state
@handle_errors
def entity(state: State, name: str, no_relations: bool, as_of: str | None, fmt: str) -> None:
    """A memory or entity (ADR-012, #123, a commit, a path, a title) and its edges in and out."""
    found = state.router().get_entity(name, include_relations=not no_relations, as_of=as_of)
    data = found.to_dict()

    def text() -> str:
        lines = [f"{data['name']}  ({data['kind']})"]
        if data["memories"] and data["kind"] != "memory":
            lines.append("  memories: " + ", ".join(data["memories"]))
        lines.extend("  " + _arrow(relation) for relation in data["relations"])
        return "\n".join(lines)

    emit(fmt, data, text)


@graph.command()
@click.argument("name")
@click.option("--depth", type=click.IntRange(1, 4), default=2, show_default=True, help="Hops to follow.")
@click.option("--type", "types", multiple=True, metavar="TYPE", help="Follow only this edge type (repeatable).")
@click.option("--as-of", metavar="YYYY-MM-DD", help="Only edges written in memories valid on that day.")
@FORMAT
@pass_state
@handle_errors
def related(state: State, name: str, depth: int, types: tuple[str, ...], as_of: str | None, fmt: str) -> None:
    """Memories and entities within --depth hops of NAME, nearest first, with the edges that reach them."""
    found = state.router().related(name, depth=depth, types=list(types) or None, as_of=as_of)
    items = [item.to_dict() for item in found]
    data = {"name": name, "depth": depth, "related": items}

    def text() -> str:
        if not items:
            return "nothing related"
        lines = []
        for item in items:
            lines.append(f"{item['depth']}  {item['name']}  ({item['kind']})")
            lines.extend("     " + _arrow(relation) for relation in item["via"])
        return "\n".join(lines)

    emit(fmt, data, text)


@graph.command()
@click.argument("source")
@click.argument("target")
@FORMAT
@pass_state
@handle_errors
def path(state: State, source: str, target: str, fmt: str) -> None:
    """The shortest typed path from SOURCE to TARGET (edges followed both ways)."""
    found = state.router().path(source, target)
    data = found.to_dict()

    def text() -> str:
        if not found.found:
            return f"no path from {found.source} to {found.target}"
        return "\n".join(_arrow(relation) for relation in data["relations"]) or f"{found.source} is {found.target}"

    emit(fmt, data, text)


@graph.command()
@FORMAT
@pass_state
@handle_errors
def stats(state: State, fmt: str) -> None:
    """Edge and entity counts, dangling references (links to missing memories) and orphan memories."""
    data = state.router().graph_stats()

    def text() -> str:
        lines = [f"{data['memories']} memories, {data['edges']} edges, {data['entities']} entities"]
        lines.append("edge types: " + ", ".join(f"{k} {v}" for k, v in data["edge_types"].items()))
        lines.append(f"dangling references: {data['dangling_count']}")
        lines.extend(f"  {d['memory']}:{d['line']} -> {d['target']}" for d in data["dangling"])
        lines.append(f"orphans (no edge in or out): {data['orphan_count']}")
        lines.extend(f"  {name}" for name in data["orphans"])
        return "\n".join(lines)

    emit(fmt, data, text)


@graph.command()
@click.option(
    "--format", "fmt", type=click.Choice(_EXPORT_FORMATS), default="json", show_default=True, help="Output format."
)
@pass_state
@handle_errors
def export(state: State, fmt: str) -> None:
    """The whole graph as JSON, GraphML or Graphviz dot, on stdout."""
    output = state.router().graph_export(fmt)
    click.echo(output, nl=not output.endswith("\n"))
