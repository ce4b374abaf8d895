"""Reciprocal rank fusion: merge ranked lists from several retrievers.

Each retriever contributes ``weight / (k + rank)`` for every memory it
returns; the sum orders the fused list. Ranks, not raw scores, are combined,
so retrievers with incomparable score scales (BM25, cosine) mix fairly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memrouter.core.model import Match
from memrouter.core.records import record

__all__ = ["Ranked", "Fused", "reciprocal_rank_fusion"]


@record
class Ranked:
    """One retriever's candidate: a memory row id, its raw score, optional detail.

    ``offset`` is where in the memory's body the candidate matched, when the
    retriever knows (dense: the start of the best chunk).
    """

    memory_id: int
    score: float
    detail: str | None = None
    offset: int | None = None


@record
class Fused:
    """A fused result: the row id, the fused score, why (per retriever) and a body offset if known."""

    memory_id: int
    score: float
    why: tuple[Match, ...]
    offset: int | None = None

    @property
    def snippet_offset(self) -> int | None:
        """Where a hit found by meaning alone matched (its best chunk), for its snippet."""
        if self.offset is None or any(match.retriever == "lexical" for match in self.why):
            return None
        return self.offset


def reciprocal_rank_fusion(
    lists: Mapping[str, Sequence[Ranked]], weights: Mapping[str, float], k: int = 60, limit: int | None = None
) -> list[Fused]:
    """Fuse ``lists`` (retriever name -> candidates, best first), best ``limit`` first.

    A single list keeps its own order and scores, so one retriever alone
    behaves exactly as it would unfused.
    """
    active = {name: ranked for name, ranked in lists.items() if ranked}
    if len(active) == 1:
        ((name, ranked),) = active.items()
        return [
            Fused(c.memory_id, c.score, (Match(name, rank, round(c.score, 6), c.detail),), c.offset)
            for rank, c in enumerate(ranked[:limit], 1)
        ]
    totals: dict[int, float] = {}
    matches: dict[int, list[Match]] = {}
    offsets: dict[int, int] = {}
    for name, ranked in active.items():
        weight = weights.get(name, 1.0)
        for rank, candidate in enumerate(ranked, 1):
            totals[candidate.memory_id] = totals.get(candidate.memory_id, 0.0) + weight / (k + rank)
            matches.setdefault(candidate.memory_id, []).append(
                Match(name, rank, round(candidate.score, 6), candidate.detail)
            )
            if candidate.offset is not None:
                offsets.setdefault(candidate.memory_id, candidate.offset)
    ordered = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [Fused(mid, round(score, 6), tuple(matches[mid]), offsets.get(mid)) for mid, score in ordered]
