"""The drawn graph: the neighbourhood of a memory or entity as nodes and labelled lines, laid out by the server.

``build`` starts at the centre and, for it and each opened node, adds every
edge ``Router.neighbors`` gives and the node at its other end, up to
``MAX_NODES`` nodes. A reference to a memory that does not exist (a
``mem:`` target) is a dangling node: drawn dashed and never opened.

``layout`` is deterministic, so the same graph always looks the same: a
radial tree around the centre, each node on the ring of its distance from
the centre (rings spaced ``RING`` apart, wider when crowded), inside the
slice of its parent's angle that its own subtree needs (children in name
order). A label sits under its node, or beside it when the node's edge
from its parent is steep (so the edge does not run through it). Edges
between the same two nodes are bent apart so their labels do not overlap. The template draws it as inline SVG (no script needed: each
node is a link that opens or closes it; ``ui.js`` swaps the drawing in
place) beside a table of the same edges as its text alternative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.model import Relation

__all__ = ["MAX_NODES", "MAX_OPEN", "Drawing", "DrawnEdge", "DrawnNode", "build", "layout"]

MAX_OPEN = 12
MAX_NODES = 60
RING = 170.0
MIN_GAP = 44.0  # px of ring between neighbouring nodes
NODE_RADIUS = 9.0
LABEL_CHARS = 32
CHAR_WIDTH = 7.2  # px per label character, to size the drawing
PAIR_SPREAD = 34.0  # px between the labels of edges joining the same two nodes
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
    beside: bool = False  # its label goes beside it (reached by a steep edge), not under it

    @property
    def label(self) -> str:
        short = self.name if len(self.name) <= LABEL_CHARS else self.name[: LABEL_CHARS - 1] + "…"
        return f"{short} (dangling)" if self.dangling else short

    @property
    def anchor(self) -> str:
        """The label's ``text-anchor``: ``middle`` under the node, or ``start`` beside it (``beside``)."""
        return "start" if self.beside else "middle"

    @property
    def label_x(self) -> float:
        return self.x + (14.0 if self.beside else 0.0)

    @property
    def label_y(self) -> float:
        return self.y + (4.0 if self.beside else 26.0)


@dataclass
class DrawnEdge:
    """An edge of the drawing: ``source`` -``type``-> ``target``, written in ``memory`` at ``line``."""

    source: str
    type: str
    target: str
    memory: str
    line: int
    dangling: bool
    path: str = ""
    label_x: float = 0.0
    label_y: float = 0.0


@dataclass
class Drawing:
    """The nodes and edges around ``centre`` with their positions, and the drawing's extent."""

    centre: str
    nodes: dict[str, DrawnNode]
    edges: list[DrawnEdge]
    opened: list[str]  # opened nodes besides the centre, in the order they were opened
    left_out: int = 0  # edges not drawn: their node would pass MAX_NODES
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
    """Place the nodes (a radial tree), route the edges and size the drawing; see the module docstring."""
    children: dict[str, list[str]] = {name: [] for name in drawing.nodes}
    for node in drawing.nodes.values():
        if node.parent is not None:
            children[node.parent].append(node.name)
    for names in children.values():
        names.sort()
    weights: dict[str, int] = {}

    def weigh(name: str) -> int:
        weights[name] = max(1, sum(weigh(child) for child in children[name]))
        return weights[name]

    weigh(drawing.centre)
    deepest = max(node.depth for node in drawing.nodes.values())
    radii = [0.0]
    for depth in range(1, deepest + 1):
        crowd = sum(1 for node in drawing.nodes.values() if node.depth == depth)
        radii.append(max(radii[-1] + RING, crowd * MIN_GAP / (2 * math.pi)))

    def place(name: str, start: float, end: float) -> None:
        node = drawing.nodes[name]
        angle = (start + end) / 2
        node.x, node.y = radii[node.depth] * math.cos(angle), radii[node.depth] * math.sin(angle)
        at = start
        for child in children[name]:
            share = (end - start) * weights[child] / weights[name]
            place(child, at, at + share)
            at += share

    place(drawing.centre, -math.pi / 2, 3 * math.pi / 2)  # the first child straight up, then clockwise
    for node in drawing.nodes.values():  # a label under a node reached from above or below would sit on its edge
        if node.parent is not None:
            parent = drawing.nodes[node.parent]
            node.beside = abs(node.y - parent.y) > abs(node.x - parent.x)
    _route(drawing)
    _size(drawing)
    return drawing


def _route(drawing: Drawing) -> None:
    """Each edge's path (a line, or a bend when it shares its two nodes) and where its label goes."""
    pairs: dict[frozenset[str], list[DrawnEdge]] = {}
    for edge in drawing.edges:
        pairs.setdefault(frozenset((edge.source, edge.target)), []).append(edge)
    for group in pairs.values():
        for number, edge in enumerate(group):
            start, end = drawing.nodes[edge.source], drawing.nodes[edge.target]
            dx, dy = end.x - start.x, end.y - start.y
            length = math.hypot(dx, dy) or 1.0
            # The normal of the pair's direction, the same for both directions, so bends spread, not cross.
            sign = 1.0 if (start.name < end.name) else -1.0
            nx, ny = -dy / length * sign, dx / length * sign
            offset = (number - (len(group) - 1) / 2) * PAIR_SPREAD
            mid_x, mid_y = (start.x + end.x) / 2 + nx * offset, (start.y + end.y) / 2 + ny * offset
            control_x, control_y = 2 * mid_x - (start.x + end.x) / 2, 2 * mid_y - (start.y + end.y) / 2
            tx, ty = end.x - control_x, end.y - control_y
            tail = math.hypot(tx, ty) or 1.0
            stop_x, stop_y = end.x - tx / tail * (NODE_RADIUS + 3), end.y - ty / tail * (NODE_RADIUS + 3)
            edge.path = f"M{start.x:.1f} {start.y:.1f} Q{control_x:.1f} {control_y:.1f} {stop_x:.1f} {stop_y:.1f}"
            edge.label_x, edge.label_y = mid_x, mid_y


def _size(drawing: Drawing) -> None:
    """The view box: every node, its label and every edge label, with a margin."""
    xs: list[float] = []
    ys: list[float] = []
    for node in drawing.nodes.values():
        width = len(node.label) * CHAR_WIDTH
        left = node.label_x if node.beside else node.label_x - width / 2
        xs += [node.x - NODE_RADIUS, node.x + NODE_RADIUS, left, left + width]
        ys += [node.y - NODE_RADIUS - 4, node.label_y + 6]
    for edge in drawing.edges:
        half = len(edge.type) * CHAR_WIDTH / 2
        xs += [edge.label_x - half, edge.label_x + half]
        ys += [edge.label_y - 12, edge.label_y + 6]
    margin = 16.0
    low_x, low_y = min(xs) - margin, min(ys) - margin
    drawing.box = (low_x, low_y, max(xs) + margin - low_x, max(ys) + margin - low_y)
