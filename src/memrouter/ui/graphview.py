"""The drawn graph: the neighbourhood of a memory or entity as nodes and labelled lines, laid out by the server.

``build`` starts at the centre and, for it and each opened node, adds every
edge ``Router.neighbors`` gives and the node at its other end, up to
``MAX_NODES`` nodes. A reference to a memory that does not exist (a
``mem:`` target) is a dangling node: drawn dashed and never opened.

``layout`` is deterministic, so the same graph always looks the same: a
tree read from left to right. The centre is in the first column, each node
in the column of its distance from it, placed after its parent's subtree
(children in name order; a node with children at the middle of them), its
name beside it. The line from a parent starts after the parent's name and
ends at the child with the edge types written just before it (``→ type``
from parent to child, ``← type`` the other way, ``↔ type`` both; both
arrowheads when both ways). An edge between two nodes neither of which reached the other (a
cross edge) leaves both after their names and bows out to the right,
labelled at its bend. The template draws it as inline
SVG (no script needed: each node is a link that opens or closes it;
``ui.js`` swaps the drawing in place) beside a table of the same edges,
its text alternative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.core.model import Relation

__all__ = ["MAX_NODES", "MAX_OPEN", "Drawing", "DrawnEdge", "DrawnLine", "DrawnNode", "build", "layout"]

MAX_OPEN = 12
MAX_NODES = 60
ROW = 30.0  # px between the rows of the tree
NODE_RADIUS = 9.0
LABEL_GAP = 14.0  # px from a node's centre to its name
LABEL_CHARS = 40
CHAR_WIDTH = 7.2  # px per label character (13 px sans), to size the drawing
TYPE_CHAR_WIDTH = 6.8  # px per edge-type character (11 px monospace)
COLUMN_GAP = 60.0  # px between a column's longest name and the next column's edge labels
DANGLING_KINDS = ("mem",)  # reference kinds that name a memory: one left as a reference names none


@dataclass
class DrawnNode:
    """A node of the drawing: a memory or entity name, where it sits, whether it is open."""

    name: str
    kind: str
    depth: int
    parent: str | None
    dangling: bool = False
    opened: bool = False
    edges: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def label(self) -> str:
        short = self.name if len(self.name) <= LABEL_CHARS else self.name[: LABEL_CHARS - 1] + "…"
        return f"{short} (dangling)" if self.dangling else short

    @property
    def label_x(self) -> float:
        return self.x + LABEL_GAP

    @property
    def label_y(self) -> float:
        return self.y + 4.5

    @property
    def port_x(self) -> float:
        """Where lines to its children start: after its name."""
        return self.label_x + len(self.label) * CHAR_WIDTH + 6


@dataclass
class DrawnEdge:
    """An edge of the drawing: ``source`` -``type``-> ``target``, written in ``memory`` at ``line``."""

    source: str
    type: str
    target: str
    memory: str
    line: int
    dangling: bool


@dataclass
class DrawnLine:
    """One line of the drawing: every edge between two nodes, its path and its label."""

    path: str
    label: str
    label_x: float
    label_y: float
    anchor: str  # the label's text-anchor
    forward: bool  # an arrowhead at the path's end
    backward: bool  # an arrowhead at its start
    dangling: bool
    cross: bool  # between two nodes neither of which reached the other


@dataclass
class Drawing:
    """The nodes and edges around ``centre`` with their positions, and the drawing's extent."""

    centre: str
    nodes: dict[str, DrawnNode]
    edges: list[DrawnEdge]
    opened: list[str]  # opened nodes besides the centre, in the order they were opened
    left_out: int = 0  # edges not drawn: their node would pass MAX_NODES
    lines: list[DrawnLine] = field(default_factory=list)
    box: tuple[float, float, float, float] = field(default=(0.0, 0.0, 0.0, 0.0))

    @property
    def view_box(self) -> str:
        return " ".join(f"{value:.0f}" for value in self.box)

    def href(self, node: DrawnNode, path: str = "/graph") -> str:
        """The address of this drawing with ``node`` opened, or closed when it is open."""
        opened = [name for name in self.opened if name != node.name]
        if not node.opened:
            opened.append(node.name)
        return f"{path}?" + urlencode([("name", self.centre), *(("open", name) for name in opened)])


def build(
    centre: str, kind: str, opened: list[str], neighbours: Callable[[str], list[Relation]], *, most: int = MAX_NODES
) -> Drawing:
    """The drawing around ``centre`` (of ``kind``) with the ``opened`` nodes' edges too (those reached)."""
    drawing = Drawing(centre, {centre: DrawnNode(centre, kind, 0, None)}, [], [])
    seen: set[tuple[str, str, str, str, int]] = set()
    waiting = [name for name in dict.fromkeys(opened) if name != centre]
    _open(drawing, centre, neighbours, seen, most)
    progress = True
    while waiting and progress:  # a node opened before its parent was: try it again once the parent is open
        progress = False
        for name in list(waiting):
            node = drawing.nodes.get(name)
            if node is not None and not node.dangling:
                waiting.remove(name)
                drawing.opened.append(name)
                _open(drawing, name, neighbours, seen, most)
                progress = True
    for edge in drawing.edges:
        drawing.nodes[edge.source].edges += 1
        drawing.nodes[edge.target].edges += 1
    return layout(drawing)


def _open(
    drawing: Drawing,
    name: str,
    neighbours: Callable[[str], list[Relation]],
    seen: set[tuple[str, str, str, str, int]],
    most: int,
) -> None:
    node = drawing.nodes[name]
    node.opened = True
    for relation in neighbours(name):
        outgoing = relation.source == name
        if not outgoing and relation.target != name:
            continue  # an edge of another node the name stands for
        other = relation.target if outgoing else relation.source
        key = (relation.source, relation.type, relation.target, relation.memory, relation.line)
        if other == name or key in seen:
            continue
        dangling = outgoing and relation.target_kind in DANGLING_KINDS
        if other not in drawing.nodes:
            if len(drawing.nodes) >= most:
                drawing.left_out += 1
                continue
            kind = relation.target_kind if outgoing else "memory"
            drawing.nodes[other] = DrawnNode(other, kind, node.depth + 1, name, dangling=dangling)
        seen.add(key)
        drawing.edges.append(
            DrawnEdge(relation.source, relation.type, relation.target, relation.memory, relation.line, dangling)
        )


def layout(drawing: Drawing) -> Drawing:
    """Place the nodes (a tree from left to right), draw the lines and size the drawing; see the module docstring."""
    children: dict[str, list[str]] = {name: [] for name in drawing.nodes}
    for node in drawing.nodes.values():
        if node.parent is not None:
            children[node.parent].append(node.name)
    for names in children.values():
        names.sort()
    rows = 0

    def place(name: str) -> float:
        nonlocal rows
        node = drawing.nodes[name]
        if children[name]:
            placed = [place(child) for child in children[name]]
            node.y = (placed[0] + placed[-1]) / 2
        else:
            node.y = rows * ROW
            rows += 1
        return node.y

    place(drawing.centre)
    _columns(drawing)
    _draw_lines(drawing)
    _size(drawing)
    return drawing


def _type_label(edges: list[DrawnEdge], start: str) -> str:
    """The edge types of a line, each once: ``→ type`` away from ``start``, ``← type`` towards it, ``↔`` both."""
    ways: dict[str, set[bool]] = {}
    for edge in edges:
        ways.setdefault(edge.type, set()).add(edge.source == start)
    arrows = {frozenset({True}): "→", frozenset({False}): "←", frozenset({True, False}): "↔"}
    return ", ".join(f"{arrows[frozenset(way)]} {kind}" for kind, way in ways.items())


def _columns(drawing: Drawing) -> None:
    """Each depth's x: after the previous column's longest name and room for the edge labels into this one."""
    deepest = max(node.depth for node in drawing.nodes.values())
    by_depth: list[list[DrawnNode]] = [[] for _ in range(deepest + 1)]
    for node in drawing.nodes.values():
        by_depth[node.depth].append(node)
    pairs = _pairs(drawing)
    x = 0.0
    for depth, column in enumerate(by_depth):
        if depth:
            labels = [
                len(_type_label(edges, drawing.nodes[node.parent or ""].name)) * TYPE_CHAR_WIDTH
                for node in column
                for edges in [pairs.get(frozenset((node.name, node.parent or "")), [])]
            ]
            x = max(node.port_x for node in by_depth[depth - 1]) + COLUMN_GAP + max(labels, default=0.0)
        for node in column:
            node.x = x


def _pairs(drawing: Drawing) -> dict[frozenset[str], list[DrawnEdge]]:
    pairs: dict[frozenset[str], list[DrawnEdge]] = {}
    for edge in drawing.edges:
        pairs.setdefault(frozenset((edge.source, edge.target)), []).append(edge)
    return pairs


def _draw_lines(drawing: Drawing) -> None:
    """One line per pair of nodes: from parent to child, or a cross edge bowing out to the left."""
    for edges in _pairs(drawing).values():
        first = drawing.nodes[edges[0].source]
        second = drawing.nodes[edges[0].target]
        dangling = any(edge.dangling for edge in edges)
        if second.parent == first.name or first.parent == second.name:
            parent, child = (first, second) if second.parent == first.name else (second, first)
            start_x, end_x = parent.port_x, child.x - NODE_RADIUS - 3
            bend = (end_x - start_x) / 2
            path = (
                f"M{start_x:.1f} {parent.y:.1f} C{start_x + bend:.1f} {parent.y:.1f} "
                f"{end_x - bend:.1f} {child.y:.1f} {end_x:.1f} {child.y:.1f}"
            )
            drawing.lines.append(
                DrawnLine(
                    path, _type_label(edges, parent.name), end_x - 6, child.y - 5, "end",
                    forward=any(edge.source == parent.name for edge in edges),
                    backward=any(edge.source == child.name for edge in edges),
                    dangling=dangling, cross=False,
                )
            )  # fmt: skip
            continue
        start_x, end_x = first.port_x, second.port_x
        out = max(start_x, end_x) + 24 + 0.2 * abs(first.y - second.y)
        path = (
            f"M{start_x:.1f} {first.y:.1f} C{out:.1f} {first.y:.1f} {out:.1f} {second.y:.1f} {end_x:.1f} {second.y:.1f}"
        )
        middle_x = (start_x + end_x) / 8 + out * 6 / 8
        drawing.lines.append(
            DrawnLine(
                path, _type_label(edges, first.name), middle_x + 4, (first.y + second.y) / 2 + 4, "start",
                forward=any(edge.source == first.name for edge in edges),
                backward=any(edge.source == second.name for edge in edges),
                dangling=dangling, cross=True,
            )
        )  # fmt: skip


def _size(drawing: Drawing) -> None:
    """The view box: every node with its name, and every line with its label, with a margin."""
    xs: list[float] = []
    ys: list[float] = []
    for node in drawing.nodes.values():
        xs += [node.x - NODE_RADIUS, node.port_x]
        ys += [node.y - ROW / 2, node.y + ROW / 2]
    for line in drawing.lines:
        width = len(line.label) * TYPE_CHAR_WIDTH
        xs += [line.label_x - width, line.label_x] if line.anchor == "end" else [line.label_x, line.label_x + width]
        ys += [line.label_y - 12, line.label_y + 4]
    margin = 12.0
    low_x, low_y = min(xs) - margin, min(ys) - margin
    drawing.box = (low_x, low_y, max(xs) + margin - low_x, max(ys) + margin - low_y)
