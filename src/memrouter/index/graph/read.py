"""The knowledge graph, read: a per-generation view, traversal, and the graph retriever.

A node is a memory row id (``int``) or an entity key (``str``, such as
``adr:12``; see ``memrouter.index.graph.extract``). An edge written in memory
M to key K links M to every memory holding K (other than M), or to the entity
node K when none does; a memory is also reached from every edge that names
one of its keys. The view is loaded once per index generation, so a warm
traversal never touches SQLite.

The retriever (``GraphIndex.search``) recognises keys in the query (mentions,
names, aliases, normalised), seeds the memories holding them and the
memories that reference them, then follows typed edges 1-2 hops with decay;
a hub (a key named by many memories) spreads less. It also takes the best
hits of the lexical list and walks one hop from each (the memories it links
to and that link to it), so that a memory only a link leads to is found.
"""

from __future__ import annotations

import math
import sqlite3
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from memrouter.core.model import PENDING, Filters, Relation
from memrouter.index.fusion import Ranked
from memrouter.index.graph.extract import key_label, query_keys, word_runs
from memrouter.index.graph.store import decode_edges, decode_keys
from memrouter.index.sqlite.lexical import Allowed, filter_sql

__all__ = ["Edge", "GraphIndex", "GraphView", "Node", "Step"]

Node = int | str
# Each hop multiplies the score by this, times the edge type's weight.
HOP_DECAY = 0.5
TYPE_WEIGHTS = {"supersedes": 1.0, "superseded_by": 1.0, "depends_on": 1.0, "implements": 1.0, "links_to": 0.9,
                "relates_to": 0.8, "names": 1.0, "mentions": 0.6, "about_code": 0.5}  # fmt: skip
MAX_VISITED = 5000
# The retriever also walks one hop from the best HIT_SEEDS of another retriever's list, the hit at rank r
# seeding HIT_WEIGHT / r, and at most FAN_OUT hops from any node.
HIT_SEEDS = 5
HIT_WEIGHT = 1.0
FAN_OUT = 50


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

    @classmethod
    def local(cls, conn: sqlite3.Connection) -> GraphView:
        """The graph of the local index ``conn``."""
        return cls(
            conn.execute("SELECT id, name, valid_from, valid_until FROM memories WHERE status != ?", (PENDING,)),
            conn.execute("SELECT memory_id, keys, edges FROM graph_rows ORDER BY memory_id"),
        )

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


class GraphIndex:
    """The graph view of one index, reloaded when the index generation changes."""

    def __init__(self) -> None:
        self._generation: str | None = None
        self._view: GraphView | None = None

    def view(self, conn: sqlite3.Connection) -> GraphView:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        generation = row[0] if row else ""
        if self._view is None or generation != self._generation:
            self._view = GraphView.local(conn)
            self._generation = generation
        return self._view

    def search(
        self,
        conn: sqlite3.Connection,
        query: str,
        filters: Filters,
        limit: int = 50,
        passing: Allowed | None = None,
        hits: Sequence[Ranked] = (),
        view: GraphView | None = None,
    ) -> list[Ranked]:
        """Memories reached from the entities ``query`` names and, one hop on, from its best ``hits`` (another
        retriever's list, best first: the memories they link to and that link to them); ``detail`` shows the path.

        ``view``: the graph to walk, its memories numbered as in ``conn`` (default: ``conn``'s own graph);
        a memory it holds that ``conn`` lacks (a negative number) is never a result."""
        view = view if view is not None else self.view(conn)
        best: dict[int, tuple[float, tuple[Step, ...]]] = {}
        seeds = [key for key in query_keys(query, view.vocabulary) if view.knows(key)]

        def offer(memory: int, score: float, path: tuple[Step, ...]) -> None:
            if memory < 0:
                return
            old = best.get(memory)
            if old is None or score > old[0]:
                best[memory] = (score, path or (old[1] if old else ()))  # a path says more than "a best hit"

        for key in seeds[:20]:
            for path, score in _paths(view, key):
                if isinstance(path[-1].target, int):
                    offer(path[-1].target, score, path)
        seeded = [hit.memory_id for hit in hits[:HIT_SEEDS]]
        for rank, memory in enumerate(seeded, 1):
            offer(memory, HIT_WEIGHT / rank, ())  # kept in their order, ahead of what they lead to
            steps = view.adjacent(memory)
            spread = HIT_WEIGHT / rank / max(1.0, math.log2(1 + len(steps)))  # a hub spreads less
            for step in steps[:FAN_OUT]:
                if isinstance(step.target, int) and step.target not in seeded:
                    offer(step.target, spread * view.hop_factor(step), (step,))
        if not best:
            return []
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))
        if filters.restricts:  # validity too: a retired memory is no result here either
            if passing is not None:
                ids_in, timed_out = passing(conn, filters)
            else:
                where, params = filter_sql(filters)
                ids_in = {row[0] for row in conn.execute(f"SELECT m.id FROM memories m WHERE 1{where}", params)}
                timed_out = set()
            ranked = [item for item in ranked if item[0] in ids_in and item[0] not in timed_out]
        return [
            Ranked(mid, round(score, 6), "graph: " + (view.describe(path) if path else "a best hit"))
            for mid, (score, path) in ranked[:limit]
        ]


def _paths(
    view: GraphView, key: str, max_hops: int = 2, fan_out: int = FAN_OUT
) -> Iterator[tuple[tuple[Step, ...], float]]:
    """Paths from entity ``key``, each with its score: to the memories holding it (no hop, score 1), then up to
    ``max_hops`` typed hops on, each multiplying the score by its ``GraphView.hop_factor``."""
    frontier: list[tuple[tuple[Step, ...], float]] = [((step,), view.hop_factor(step)) for step in view.adjacent(key)]
    for hops in range(max_hops + 1):
        yield from frontier
        if hops == max_hops:
            return
        following: list[tuple[tuple[Step, ...], float]] = []
        for path, score in frontier[:200]:
            node = path[-1].target
            if not isinstance(node, int):
                continue
            for step in view.adjacent(node)[:fan_out]:
                if step.target != path[0].source and all(step.target != s.target for s in path):
                    following.append(((*path, step), score * view.hop_factor(step)))
        frontier = following
