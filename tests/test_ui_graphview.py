"""The drawn graph's building and layout (``memrouter.ui.graphview``), over a small graph of real Relation records."""

from __future__ import annotations

import math
from itertools import combinations

from memrouter.core.model import Relation
from memrouter.ui.graphview import build

EDGES = [
    Relation("a", "relates_to", "b", "memory", "a", 3),
    Relation("b", "mentions", "a", "memory", "b", 4),
    Relation("a", "links_to", "gone", "mem", "a", 5),
    Relation("c", "links_to", "a", "memory", "c", 2),
    Relation("b", "implements", "ADR-7", "adr", "b", 6),
    *(Relation("hub", "mentions", f"n{i:02d}", "memory", "hub", i + 1) for i in range(30)),
    Relation("c", "relates_to", "hub", "memory", "c", 9),
    Relation("c", "mentions", "b", "memory", "c", 7),
    Relation("b", "relates_to", "a", "memory", "b", 8),
]


def neighbours(name: str) -> list[Relation]:
    return [edge for edge in EDGES if name in (edge.source, edge.target)]


def test_the_centre_and_its_edges_are_drawn_and_dangling_references_marked() -> None:
    drawing = build("a", "memory", [], neighbours)
    assert set(drawing.nodes) == {"a", "b", "gone", "c"}
    assert len(drawing.edges) == 5 and drawing.opened == []
    assert drawing.nodes["gone"].dangling and drawing.nodes["gone"].label == "gone (dangling)"
    assert [e.dangling for e in drawing.edges if e.target == "gone"] == [True]
    centre, rows = drawing.nodes["a"], sorted(node.y for node in drawing.nodes.values() if node.depth == 1)
    assert centre.x == 0.0 and centre.y == (rows[0] + rows[-1]) / 2  # first column, between its children


def test_opened_nodes_add_their_edges_in_any_order_and_unreached_names_are_dropped() -> None:
    one = build("a", "memory", ["b", "c", "nowhere", "gone"], neighbours)
    other = build("a", "memory", ["gone", "nowhere", "c", "b"], neighbours)
    assert set(one.nodes) == set(other.nodes) == {"a", "b", "gone", "c", "ADR-7", "hub"}
    assert one.opened == ["b", "c"] and other.opened == ["c", "b"]  # a dangling node is never opened
    assert {n: (v.x, v.y) for n, v in one.nodes.items()} == {n: (v.x, v.y) for n, v in other.nodes.items()}
    nested = build("a", "memory", ["hub", "c"], neighbours)  # hub is reached only once c is open
    assert nested.opened == ["c", "hub"] and "n29" in nested.nodes and nested.nodes["n29"].depth == 3


def test_the_layout_is_deterministic_and_keeps_nodes_apart() -> None:
    first = build("a", "memory", ["c", "hub"], neighbours)
    again = build("a", "memory", ["c", "hub"], neighbours)
    assert [(n.name, n.x, n.y) for n in first.nodes.values()] == [(n.name, n.x, n.y) for n in again.nodes.values()]
    assert [line.path for line in first.lines] == [line.path for line in again.lines]
    for left, right in combinations(first.nodes.values(), 2):
        assert math.hypot(left.x - right.x, left.y - right.y) >= 30, (left.name, right.name)
        if left.depth == right.depth:  # one column: each name on its own row
            assert left.x == right.x and abs(left.y - right.y) >= 30
        else:  # a deeper column starts after the shallower one's names
            shallow, deep = sorted((left, right), key=lambda node: node.depth)
            assert deep.x > shallow.port_x
    low_x, low_y, width, height = first.box
    for node in first.nodes.values():
        assert low_x <= node.x - 9 and node.port_x <= low_x + width and low_y <= node.y <= low_y + height


def test_edges_between_the_same_two_nodes_share_one_line_labelled_both_ways() -> None:
    drawing = build("a", "memory", [], neighbours)
    assert len(drawing.edges) == 5 and len(drawing.lines) == 3
    [both] = [line for line in drawing.lines if "relates_to" in line.label]
    assert both.label == "↔ relates_to, ← mentions" and both.forward and both.backward and not both.cross
    [gone] = [line for line in drawing.lines if line.dangling]
    assert gone.label == "→ links_to" and gone.forward and not gone.backward


def test_an_edge_between_two_nodes_neither_reached_through_the_other_is_a_cross_line() -> None:
    assert not any(line.cross for line in build("a", "memory", [], neighbours).lines)
    drawing = build("a", "memory", ["b"], neighbours)  # b and c both hang off a; opening b finds c -> b
    [cross] = [line for line in drawing.lines if line.cross]
    assert cross.label == "→ mentions" and cross.forward and not cross.backward and not cross.dangling
    assert cross.label_x > max(drawing.nodes["b"].port_x, drawing.nodes["c"].port_x)  # bowed out past their names


def test_past_the_node_limit_edges_are_counted_not_drawn() -> None:
    drawing = build("hub", "memory", [], neighbours, most=10)
    assert len(drawing.nodes) == 10 and drawing.left_out == 31 - 9  # 31 edges, 9 drawn
    assert all(e.source in drawing.nodes and e.target in drawing.nodes for e in drawing.edges)


def test_a_link_opens_a_closed_node_and_closes_an_open_one() -> None:
    drawing = build("a", "memory", ["b"], neighbours)
    assert drawing.href(drawing.nodes["b"]) == "/graph?name=a"
    assert drawing.href(drawing.nodes["c"], "/graph/drawing") == "/graph/drawing?name=a&open=b&open=c"
