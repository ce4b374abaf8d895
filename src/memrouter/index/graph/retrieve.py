"""The graph retriever: memories reached from what the query names, and one hop on from another list's best.

It recognises keys in the query (mentions, names, aliases, normalised),
seeds the memories holding them and the memories that reference them, then
follows typed edges 1-2 hops with decay; a hub (a key named by many
memories) spreads less. It also takes the best hits of the lexical list and
walks one hop from each (the memories it links to and that link to it), so
that a memory only a link leads to is found. It walks a ``GraphView`` from
any store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

from memrouter.core.model import Filters
from memrouter.index.fusion import Ranked
from memrouter.index.graph.extract import query_keys
from memrouter.index.graph.view import GraphView, Step

__all__ = ["FAN_OUT", "HIT_SEEDS", "HIT_WEIGHT", "graph_candidates"]

# The retriever also walks one hop from the best HIT_SEEDS of another retriever's list, the hit at rank r
# seeding HIT_WEIGHT / r, and at most FAN_OUT hops from any node.
HIT_SEEDS = 5
HIT_WEIGHT = 1.0
FAN_OUT = 50


def graph_candidates(
    view: GraphView,
    query: str,
    filters: Filters,
    limit: int,
    passing: Callable[[Filters], tuple[set[int], set[int]]],
    hits: Sequence[Ranked] = (),
) -> list[Ranked]:
    """Memories reached from the entities ``query`` names and, one hop on, from its best ``hits`` (another
    retriever's list, best first: the memories they link to and that link to them); ``detail`` shows the path.

    ``view``: the graph to walk, its memories numbered as the local index numbers them (a memory the local
    index lacks, a negative number, is never a result); ``passing(filters)``: the ids passing the filters
    apart from time, and those out of effect now (``LexicalIndex.allowed``)."""
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
        ids_in, timed_out = passing(filters)
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
