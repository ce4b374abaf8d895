"""The knowledge graph as a view: nodes, typed edges and traversal, whatever store it was read from.

A node is a memory row id (``int``) or an entity key (``str``, such as
``adr:12``; see ``memrouter.index.graph.extract``). An edge written in memory
M to key K links M to every memory holding K (other than M), or to the entity
node K when none does; a memory is also reached from every edge that names
one of its keys. The local index reads its view once per generation
(``memrouter.index.sqlite.graph``); PostgreSQL from its rows
(``memrouter.index.postgres.reader``); the retriever walks either
(``memrouter.index.graph.retrieve``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memrouter.core.model import Relation
from memrouter.index.graph.codec import decode_edges, decode_keys
from memrouter.index.graph.extract import key_label, query_keys, word_runs

__all__ = ["Edge", "GraphView", "Node", "Step"]

Node = int | str
# Each hop multiplies the score by this, times the edge type's weight.
HOP_DECAY = 0.5
TYPE_WEIGHTS = {"supersedes": 1.0, "superseded_by": 1.0, "depends_on": 1.0, "implements": 1.0, "links_to": 0.9,
                "relates_to": 0.8, "names": 1.0, "mentions": 0.6, "about_code": 0.5}  # fmt: skip
MAX_VISITED = 5000


@dataclass(frozen=True, slots=True)
class Edge:
    """An edge as written: in memory ``memory`` at ``line``, of ``type``, to key ``target``."""

    memory: int
    type: str
    target: str
    label: str
    line: int
    detail: str | None


@dataclass(frozen=True, slots=True)
class Step:
    """One hop: from ``source`` to ``target`` along ``edge`` (``None``: the entity names the memory)."""

    source: Node
    target: Node
    type: str
    edge: Edge | None
    forward: bool


class GraphView:
    """Every edge and key of one index generation, held in dictionaries.

    Memories pending review are not in it, nor what they write: no graph call
    or graph-reached search result shows them (``memrouter.ops.review``).
    """

    def __init__(
        self, memories: Iterable[tuple[int, str, str | None, str | None]], rows: Iterable[tuple[int, str, str]]
    ) -> None:
        """``memories``: (row id, name, valid_from, valid_until) of every memory the graph shows; ``rows``:
        (row id, keys, edges) of the graph rows in row id order, both as ``graph_store`` writes them."""
        self.names: dict[int, str] = {}
        self.ids: dict[str, int] = {}
        self.validity: dict[int, tuple[str | None, str | None]] = {}
        for memory_id, name, valid_from, valid_until in memories:
            self.names[memory_id] = name
            self.ids[name] = memory_id
            self.validity[memory_id] = (valid_from, valid_until)
        self.key_memories: dict[str, list[int]] = {}
        self.memory_keys: dict[int, list[str]] = {}
        self.key_labels: dict[str, str] = {}
        self.out: dict[int, list[Edge]] = {}
        self.into: dict[str, list[Edge]] = {}
        for memory_id, keys, edges in rows:
            if memory_id not in self.names:  # a memory left out (pending review): its keys and links too
                continue
            labels = decode_keys(keys)
            self.memory_keys[memory_id] = list(labels)
            for key, label in labels.items():
                self.key_memories.setdefault(key, []).append(memory_id)
                self.key_labels.setdefault(key, label)
            for row in decode_edges(edges):
                edge = Edge(memory_id, *row)
                self.out.setdefault(memory_id, []).append(edge)
                self.into.setdefault(edge.target, []).append(edge)
        # Filled on first use, for this generation: each node's hops and each hop's score factor.
        self._adjacent: dict[Node, tuple[Step, ...]] = {}
        self._factors: dict[tuple[str, str], float] = {}
        self._vocabulary: set[str] | None = None
        # Filled on first use too: each node's label, and each hop's relation (by the identity of the hop,
        # one of _adjacent's, kept beside it).
        self._labels: dict[Node, str] = {}
        self._relations: dict[int, tuple[Step, Relation]] = {}
        self._citations: dict[int, int] | None = None

    # -- nodes -------------------------------------------------------------
    def knows(self, key: str) -> bool:
        return key in self.key_memories or key in self.into

    def label(self, node: Node) -> str:
        found = self._labels.get(node)
        if found is None:
            if isinstance(node, int):
                found = self.names.get(node, str(node))
            else:
                found = self.key_labels.get(node) or next((e.label for e in self.into.get(node, ())), None)
                found = found or key_label(node)
            self._labels[node] = found
        return found

    def kind(self, node: Node) -> str:
        return "memory" if isinstance(node, int) else node.partition(":")[0]

    def resolve(self, name: str) -> Node | None:
        """The node ``name`` means: a memory name, else the first key it normalises to that the graph knows."""
        if name in self.ids:
            return self.ids[name]
        direct = [name, "issue:" + name] if name.startswith("#") else [name]
        for key in (*direct, *query_keys(name)):
            if not self.knows(key):
                continue
            holders = self.key_memories.get(key, [])
            return holders[0] if len(holders) == 1 else key
        return None

    def _valid(self, memory: int, as_of: str | None) -> bool:
        if as_of is None:
            return True
        start, end = self.validity.get(memory, (None, None))
        return (start is None or start[:10] <= as_of) and (end is None or as_of < end[:10])

    def citations(self) -> dict[int, int]:
        """How many other memories link to or mention each memory (any of its keys), each citing memory once."""
        if self._citations is None:
            citing: dict[int, set[int]] = {}
            for key, edges in self.into.items():
                for memory in self.key_memories.get(key, ()):
                    citing.setdefault(memory, set()).update(e.memory for e in edges if e.memory != memory)
            self._citations = {memory: len(sources) for memory, sources in citing.items() if sources}
        return self._citations

    # -- edges ---------------------------------------------------------------
    def steps(self, node: Node, types: Iterable[str] | None = None, as_of: str | None = None) -> Iterator[Step]:
        """The hops out of ``node``, both directions, ``types`` only when given.

        Filtered from ``adjacent``: a type or date keeps or drops every hop a deduplicated one stands for alike
        (they share their type and their edge's memory), so the same hops come out as if filtered first."""
        wanted = set(types) if types is not None else None
        for step in self.adjacent(node):
            if (wanted is None or step.type in wanted) and (step.edge is None or self._valid(step.edge.memory, as_of)):
                yield step

    def _all_steps(self, node: Node) -> Iterator[Step]:
        seen: set[tuple[Node, str, bool]] = set()
        if isinstance(node, int):
            for edge in self.out.get(node, ()):
                targets: list[Node] = [m for m in self.key_memories.get(edge.target, ()) if m != node]
                for target in targets or ([] if edge.target in self.key_memories else [edge.target]):
                    if (target, edge.type, True) not in seen:
                        seen.add((target, edge.type, True))
                        yield Step(node, target, edge.type, edge, True)
            keys = self.memory_keys.get(node, ())
        else:
            keys = [node]
            for memory in self.key_memories.get(node, ()):
                yield Step(node, memory, "names", None, True)
        for key in keys:
            for edge in self.into.get(key, ()):
                if edge.memory != node and (edge.memory, edge.type, False) not in seen:
                    seen.add((edge.memory, edge.type, False))
                    yield Step(node, edge.memory, edge.type, edge, False)

    @property
    def vocabulary(self) -> set[str]:
        """The letter-and-digit runs of every ``mem:`` key the graph knows (see ``query_keys``)."""
        if self._vocabulary is None:
            self._vocabulary = {
                run for key in (*self.key_memories, *self.into) if key.startswith("mem:") for run in word_runs(key[4:])
            }
        return self._vocabulary

    def adjacent(self, node: Node) -> tuple[Step, ...]:
        """Every hop out of ``node`` (``steps`` with no type or date filter), computed once per view."""
        found = self._adjacent.get(node)
        if found is None:
            found = self._adjacent[node] = tuple(self._all_steps(node))
        return found

    def hop_factor(self, step: Step) -> float:
        """What a hop multiplies a path's score by: 1 for ``names`` (the entity names the memory), else
        ``HOP_DECAY`` times the edge type's weight, over log2(1 + the key's fan) so that a hub spreads less."""
        if step.type == "names":
            return 1.0
        key = step.edge.target if step.edge is not None else ""
        factor = self._factors.get((step.type, key))
        if factor is None:
            fan = len(self.into.get(key, ())) + len(self.key_memories.get(key, ()))
            factor = HOP_DECAY * TYPE_WEIGHTS.get(step.type, 0.7) / max(1.0, math.log2(1 + fan))
            self._factors[(step.type, key)] = factor
        return factor

    def relation(self, step: Step) -> Relation:
        """The public record of a hop, written in its edge's direction."""
        known = self._relations.get(id(step))
        if known is not None and known[0] is step:
            return known[1]
        found = self._relation(step)
        self._relations[id(step)] = (step, found)
        return found

    def _relation(self, step: Step) -> Relation:
        source, target = (step.source, step.target) if step.forward else (step.target, step.source)
        edge = step.edge
        memory = edge.memory if edge is not None else target
        valid = self.validity.get(memory, (None, None)) if isinstance(memory, int) else (None, None)
        return Relation(
            self.label(source), step.type, self.label(target), self.kind(target), self.label(memory),
            edge.line if edge is not None else 0, edge.detail if edge is not None else None, valid[0], valid[1],
        )  # fmt: skip

    def walk(
        self, start: Node, depth: int, types: Iterable[str] | None = None, as_of: str | None = None
    ) -> dict[Node, tuple[Step, ...]]:
        """Every node within ``depth`` hops of ``start`` (breadth first), with the hops that reach it."""
        types = tuple(types) if types is not None else None
        paths: dict[Node, tuple[Step, ...]] = {start: ()}
        queue: deque[Node] = deque([start])
        while queue and len(paths) < MAX_VISITED:
            node = queue.popleft()
            if len(paths[node]) >= depth:
                continue
            for step in self.steps(node, types, as_of):
                if step.target not in paths:
                    paths[step.target] = (*paths[node], step)
                    queue.append(step.target)
        del paths[start]
        return paths

    def shortest(self, source: Node, target: Node, max_depth: int = 6) -> tuple[Step, ...] | None:
        """The fewest hops from ``source`` to ``target`` (``None`` if more than ``max_depth`` or none)."""
        if source == target:
            return ()
        paths: dict[Node, tuple[Step, ...]] = {source: ()}
        queue: deque[Node] = deque([source])
        while queue and len(paths) < MAX_VISITED * 4:
            node = queue.popleft()
            if len(paths[node]) >= max_depth:
                continue
            for step in self.steps(node):
                if step.target not in paths:
                    paths[step.target] = (*paths[node], step)
                    if step.target == target:
                        return paths[step.target]
                    queue.append(step.target)
        return None

    def describe(self, steps: tuple[Step, ...]) -> str:
        """``ADR-012 -supersedes-> adr/adr-007-x`` (arrows point along each edge's direction)."""
        if not steps:
            return ""
        parts = [self.label(steps[0].source)]
        for step in steps:
            parts.append(f"-{step.type}->" if step.forward else f"<-{step.type}-")
            parts.append(self.label(step.target))
        return " ".join(parts)
