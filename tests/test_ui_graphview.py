"""The drawn graph's building and layout (``memrouter.ui.graphview``), over a small graph of real Relation records."""

from __future__ import annotations

import math
from itertools import combinations

from memrouter.model import Relation
from memrouter.ui.graphview import build

EDGES = [
    Relation("a", "relates_to", "b", "memory", "a", 3),
    Relation("b", "mentions", "a", "memory", "b", 4),
    Relation("a", "links_to", "gone", "mem", "a", 5),
    Relation("c", "links_to", "a", "memory", "c", 2),
    Relation("b", "implements", "ADR-7", "adr", "b", 6),
    *(Relation("hub", "mentions", f"n{i:02d}", "memory", "hub", i + 1) for i in range(30)),
    Relation("c", "relates_to", "hub", "memory", "c", 9),
]


def neighbours(name: str) -> list[Relation]:
    return [edge for edge in EDGES if name in (edge.source, edge.target)]


def test_the_centre_and_its_edges_are_drawn_and_dangling_references_marked() -> None:
    drawing = build("a", "memory", [], neighbours)
    assert set(drawing.nodes) == {"a", "b", "gone", "c"}
    assert len(drawing.edges) == 4 and drawing.opened == []
    assert drawing.nodes["gone"].dangling and drawing.nodes["gone"].label == "gone (dangling)"
    assert [e.dangling for e in drawing.edges if e.target == "gone"] == [True]
    assert (drawing.nodes["a"].x, drawing.nodes["a"].y) == (0.0, 0.0)


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
    assert [e.path for e in first.edges] == [e.path for e in again.edges]
    for left, right in combinations(first.nodes.values(), 2):
        assert math.hypot(left.x - right.x, left.y - right.y) > 20, (left.name, right.name)
    low_x, low_y, width, height = first.box
    for node in first.nodes.values():
        assert low_x <= node.x <= low_x + width and low_y <= node.y <= low_y + height


def test_edges_between_the_same_two_nodes_get_their_own_labels() -> None:
    drawing = build("a", "memory", [], neighbours)
    pair = [e for e in drawing.edges if {e.source, e.target} == {"a", "b"}]
    assert len(pair) == 2
    assert math.hypot(pair[0].label_x - pair[1].label_x, pair[0].label_y - pair[1].label_y) > 20


def test_past_the_node_limit_edges_are_counted_not_drawn() -> None:
    drawing = build("hub", "memory", [], neighbours, most=10)
    assert len(drawing.nodes) == 10 and drawing.left_out == 31 - 9  # 31 edges, 9 drawn
    assert all(e.source in drawing.nodes and e.target in drawing.nodes for e in drawing.edges)


def test_a_link_opens_a_closed_node_and_closes_an_open_one() -> None:
    drawing = build("a", "memory", ["b"], neighbours)
    assert drawing.href(drawing.nodes["b"]) == "/graph?name=a"
    assert drawing.href(drawing.nodes["c"], "/graph/drawing") == "/graph/drawing?name=a&open=b&open=c"
