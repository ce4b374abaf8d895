"""Relevance: a score a person can read, and a floor under weak matches.

The search pipeline's own scores are for ranking: a BM25F sum in lexical
mode, a reciprocal-rank fusion in hybrid, a cosine in semantic, on scales
that mean nothing to a reader and change whenever its constants do. Each
hit's ``relevance`` is instead the estimated chance, from 0 to 1, that the
memory answers the question, read from what every search returns whatever
its settings:

- *coverage*: the share of the query's terms, each weighted by its idf, that
  the memory holds (``LexicalIndex.coverage``; a folder's overview lends
  its words, as in search);
- *meaning*: the cosine of the memory's best passage to the query
  (``DenseIndex.similarities``), in hybrid and semantic mode only: a lexical
  search never loads the model;
- its *rank* in the list.

A logistic model per set of features (``KEYWORDS`` without meaning,
``MEANING`` with it) turns them into a probability; both were fitted on the
golden sets by ``benchmarks/fit_floor.py``, and checked on the questions of
each set left out of the fit (the figures: docs/search.md, "Relevance").
So 0.8 means the same in every mode: about four in five hits scored so
answered their question there. Down the list relevance never rises (a hit
never reads as more relevant than one ranked above it).

Hits below ``FLOOR`` are *weak*: the command line and MCP leave them out (and say "no good match" when nothing passes) unless
asked for them; the library marks them (``Hit.weak``) and keeps the list.
"""

from __future__ import annotations

import math

from memrouter.core.errors import MemoryRouterError
from memrouter.core.model import Hit
from memrouter.core.records import record, replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from memrouter.ops.workspace import Workspace

__all__ = [
    "FLOOR", "KEYWORDS", "MEANING", "Features", "Logistic", "features", "judged", "relevance",
]  # fmt: skip


@record
class Logistic:
    """``1 / (1 + exp(-(intercept + weights . x)))`` over (coverage, log rank) or (coverage, meaning, log rank)."""

    intercept: float
    weights: tuple[float, ...]

    def __call__(self, values: tuple[float, ...]) -> float:
        z = self.intercept + sum(w * x for w, x in zip(self.weights, values, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


# Fitted by benchmarks/fit_floor.py: KEYWORDS on the lexical searches of the four golden sets, MEANING on the
# hybrid and semantic searches of examples and multi-project (the ai-agents corpora are not embedded for it yet),
# FLOOR (best F1 of the hits kept) on all of them; each set left out in turn for the check (docs/search.md).
KEYWORDS = Logistic(-4.081, (5.066, -1.507))
MEANING = Logistic(-4.585, (3.998, 3.616, -1.402))
FLOOR = 0.34


@record
class Features:
    """What relevance is read from, for one hit: coverage, meaning (None in lexical mode) and rank."""

    coverage: float
    meaning: float | None
    rank: int

    def values(self) -> tuple[float, ...]:
        log_rank = math.log(self.rank)
        if self.meaning is None:
            return (self.coverage, log_rank)
        return (self.coverage, self.meaning, log_rank)


def relevance(found: Features) -> float:
    """The chance that a hit with these features answers its question (the calibrated model for its mode)."""
    return (KEYWORDS if found.meaning is None else MEANING)(found.values())


def features(ws: Workspace, query: str, hits: list[Hit], mode: str) -> list[Features | None]:
    """Each hit's features (None for one the index does not hold: an external service's, a scratchpad note)."""
    index = ws.index
    conn = ws.conn
    names = [hit.name for hit in hits]
    ids = dict(
        conn.execute(f"SELECT name, id FROM memories WHERE name IN ({', '.join('?' * len(names))})", names)
    ) if names else {}  # fmt: skip
    meanings: dict[int, float] = {}
    if mode != "lexical" and ids:
        try:
            meanings = index.dense.similarities(conn, query, list(ids.values()), index.lexical.folders(conn))
        except MemoryRouterError:  # the embedder went away since the search: judged by keywords alone
            mode = "lexical"
    held = [ids[hit.name] for hit in hits if hit.name in ids and hit.source == "canonical"]
    coverages = dict(zip(held, index.lexical.coverages(conn, query, held), strict=True))
    found: list[Features | None] = []
    for rank, hit in enumerate(hits, 1):
        memory_id = ids.get(hit.name)
        if memory_id is None or hit.source != "canonical":
            found.append(None)
            continue
        coverage = coverages[memory_id]
        meaning = meanings.get(memory_id, 0.0) if mode != "lexical" else None
        found.append(Features(round(coverage, 4), None if meaning is None else round(meaning, 4), rank))
    return found


def judged(ws: Workspace, query: str, hits: list[Hit], mode: str) -> list[Hit]:
    """``hits`` with their ``relevance`` and ``weak`` set."""
    if not hits:
        return hits
    if any(m.retriever == "dense" and not m.rank for m in hits[0].why):
        mode = "lexical"  # the search ran without meaning (its embedder is unavailable): so is its judgement
    read = ws.index.indexed(lambda: features(ws, query, hits, mode))
    judged_hits: list[Hit] = []
    ceiling = 1.0
    for hit, found in zip(hits, read, strict=True):
        if found is None:
            judged_hits.append(hit)
            continue
        ceiling = min(ceiling, relevance(found))  # never more relevant than a hit ranked above it
        judged_hits.append(replace(hit, relevance=round(ceiling, 3), weak=ceiling < FLOOR))
    return judged_hits
