"""The search pipeline, written once: candidates, fusion, time words, recency, the second stage, hits.

``memrouter.ops.search`` validates a search and decides where it goes; this
module runs it (see docs/architecture.md "A search"). The candidates come
from an ``IndexReader`` (``memrouter.index.protocol``: the local SQLite
index, or PostgreSQL with the local index as its fallback), each retriever
with the filters applied inside it; the lists are fused by reciprocal rank.
Everything after the candidates reads the local index, which always follows
the files: the rows that make hits, coverage, the second stage, usage counts
and activity times. Two steps use time (``memrouter.index.sqlite.activity``):

- a time phrase in the query ("last month", "before ADR-012") is taken out
  of the text and, by ``[search] time_words``, either lifts the memories
  active in that window (``boost``, the default: one more ranked list, of the
  candidates inside the window and up to a week after it) or keeps only them
  (``filter``);
  a query that is only a time phrase lists that window's memories, newest
  first. Each hit's ``why`` names the phrase and its window.
- recency (``[search.recency]``: a half-life in days per channel) scales a
  hit's fused score by ``0.5 + 0.5 * 2 ** (-age / half_life)``, so an old
  memory can lose at most half its score to a newer one.

An embedding endpoint that is down (``memrouter.embed.endpoint``) leaves a
hybrid search to lexical search, with a note in each hit's ``why``; a
semantic search fails. A reranking endpoint that is down leaves the fused
order as it is.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable
from functools import lru_cache

from memrouter.config.settings import Config
from memrouter.core.errors import EndpointError
from memrouter.core.lazylog import LazyLogger
from memrouter.core.model import Filters, Hit, Match, Provenance
from memrouter.core.records import field, record, replace
from memrouter.core.timehint import may_hold_time_words
from memrouter.index.fusion import Fused, Ranked, reciprocal_rank_fusion
from memrouter.index.sqlite import anchor_marks, queries
from memrouter.index.sqlite.keeper import IndexKeeper
from memrouter.index.sqlite.lexical import snippet
from memrouter.index.text import query_terms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.core.timewords import TimeWords
    from memrouter.embed.endpoint import EndpointReranker
    from memrouter.index.protocol import IndexReader
    from memrouter.index.sqlite.activity import ActivityTimes
    from memrouter.index.sqlite.connection import IndexConnection

__all__ = ["CANDIDATE_POOL", "CANONICAL", "SearchPipeline", "dense_weight"]

log = LazyLogger(__name__)

CANONICAL = "canonical"
# Each retriever returns this many candidates before fusion (docs/architecture.md "A search").
CANDIDATE_POOL = 50
_DAY = 86400.0
# What happened in a window is often written down a little after it: a boost also lifts what was written
# up to this many days after the window's end (measured on LoCoMo: benchmarks/bench_locomo.py).
BOOST_SLACK_DAYS = 7.0
# The boost's ranked list weighs this much in fusion unless ``[search.weights] time`` says otherwise.
TIME_WEIGHT = 0.5
# Query-adaptive fusion (``[search] fusion = "adaptive"``): the dense weight rises from the configured
# one, when the best lexical hit covers at least HIGH_AT of the query, to DENSE_HIGH when it covers at
# most LOW_AT (coverage: the share of the query's terms, weighted by idf, that the hit holds).
# Fitted by benchmarks/fit_fusion.py on its five evaluation sets (each left out in turn for the check).
DENSE_HIGH = 0.8
LOW_AT = 0.2
HIGH_AT = 0.6


def dense_weight(
    coverage: float, configured: float, *, high: float = DENSE_HIGH, low_at: float = LOW_AT, high_at: float = HIGH_AT
) -> float:
    """The dense weight for a query whose best lexical hit has ``coverage`` (see ``DENSE_HIGH``;
    ``benchmarks/fit_fusion.py`` replays it with other parameters)."""
    high = max(high, configured)
    if coverage >= high_at:
        return configured
    if coverage <= low_at:
        return high
    return high + (configured - high) * (coverage - low_at) / (high_at - low_at)


@record(frozen=False)
class SearchPipeline:
    """One workspace's searches: candidates from ``reader``, everything else from the local ``index``."""

    index: IndexKeeper
    reader: IndexReader
    config: Config
    activity: Callable[[], ActivityTimes]
    content_of: Callable[[str], str | None]
    _channels: tuple[str, set[str]] | None = None  # (index generation, the channels its memories are in)
    _stale: anchor_marks.StaleMarks = field(default_factory=anchor_marks.StaleMarks)  # what `verify` stored
    _reranker: EndpointReranker | None = None  # [rerank] url, made on first use

    @property
    def conn(self) -> IndexConnection:
        return self.index.conn

    def time_words(self, query: str, now: float) -> TimeWords | None:
        """The time phrase in ``query`` (relative to ``now``), unless ``[search] time_words = "off"``."""
        if self.config.search.time_words == "off" or not may_hold_time_words(query):
            return None
        from datetime import UTC, datetime  # lazy: most searches have no time words

        from memrouter.core.timewords import find_time_words

        return find_time_words(query, datetime.fromtimestamp(now, UTC))

    def run(self, query: str, limit: int, mode: str, filters: Filters, content: bool, now: float) -> builtins.list[Hit]:
        """The best ``limit`` hits for ``query`` (validated) among the memories passing ``filters``."""
        asked = query  # the second stage reads the question whole, its time phrase too
        words = self.time_words(query, now)
        note: Match | None = None
        inside: frozenset[int] | None = None
        if words is not None:
            resolved = self.activity().resolve(self.conn, words)
            if resolved is not None:
                end = resolved.end
                if end is not None and self.config.search.time_words == "boost":
                    end = _later(end, BOOST_SLACK_DAYS)
                inside = frozenset(self.activity().within(self.conn, resolved.start, end))
                note = Match("time", 0, float(len(inside)), resolved.describe())
                query = resolved.text
        if inside is not None and set(query_terms(query)) <= _generic():
            return self._newest(inside, limit, filters, note)
        boosting = inside is not None and self.config.search.time_words == "boost"
        if inside is not None and not boosting:
            filters = replace(filters, within=inside)
        recency, usage = self.config.search.recency, self.config.janitor
        decaying = self._decaying(recency)
        widened = boosting or decaying or usage.decay > 0
        # Stale and broken memories (the last `verify`) are lowered before the cut: as many more candidates as
        # may be lowered out of the top are fetched, up to ``limit`` more.
        marked = self._stale_marks()
        extra = min(len(marked), limit)
        # Lexical scoring is exact and one list keeps its own order through
        # fusion, so lexical search alone needs only ``limit`` candidates.
        pool = limit + extra if mode == "lexical" and not widened else max(limit, CANDIDATE_POOL)
        lists, skipped = self._candidates(query, mode, filters, pool)
        if boosting and inside is not None:
            lists["time"] = _inside(lists, inside)
        weights = {"time": TIME_WEIGHT, **self.config.search.weights}
        notes = (note,) if note is not None else ()
        if skipped is not None:
            notes = (*notes, Match("dense", 0, 0.0, f"lexical alone: {skipped}"))
        if self.config.search.fusion == "adaptive" and lists.get("lexical") and lists.get("dense"):
            coverage = self.index.lexical.coverage(self.conn, query, lists["lexical"][0].memory_id)
            weights["dense"] = round(dense_weight(coverage, weights.get("dense", 0.0)), 4)
            detail = f"lexical {weights.get('lexical', 1.0):g}, dense {weights['dense']:g}: the best lexical hit holds {coverage:.0%} of the query"
            notes = (*notes, Match("weights", 0, weights["dense"], detail))
        endpoint = self.config.rerank_endpoint is not None
        reranking = self.config.search.rerank and mode != "lexical" and (endpoint or bool(lists.get("dense")))
        if reranking:
            from memrouter.index.sqlite.rerank import DEPTH as RERANK_DEPTH  # loaded only when reranking

            depth = None if widened else max(limit, RERANK_DEPTH) + extra
        else:
            depth = None if widened else limit + extra
        fused = reciprocal_rank_fusion(lists, weights, self.config.search.rrf_k, depth)
        # usage decay (memrouter.index.sqlite.access): off unless [janitor] decay is set
        fused = self.index.access.decayed(self.conn, fused, now, usage.decay, usage.stale_days)
        if reranking and endpoint:  # a reranking endpoint reads the best candidates (memrouter.embed.endpoint)
            fused = self._asked_again(fused, asked, bool(lists.get("dense")))
            fused = fused if widened else fused[: limit + extra]
        elif reranking:  # the second stage reads the best candidates again (memrouter.index.sqlite.rerank)
            window = inside if boosting and inside is not None else frozenset()
            fused = self._reranked(fused, asked, lists.get("lexical", []), filters, window)
            fused = fused if widened else fused[: limit + extra]
        if extra:  # stale and broken memories stay findable, lowered and marked (memrouter.ops.verify)
            fused = self._lowered(fused, marked)
            fused = fused if widened else fused[:limit]
        if widened:  # the whole pool is reordered before the cut: channel and hash only, no bodies
            brief = queries.brief_rows(self.conn, [item.memory_id for item in fused])
            if decaying and any(recency.get(row["channel"]) for row in brief.values()):
                fused = self._decayed(fused, brief, now)
            fused = self._one_per_content(fused, brief)[:limit]
            rows = queries.hit_rows(self.conn, [item.memory_id for item in fused])
        else:
            rows = queries.hit_rows(self.conn, [item.memory_id for item in fused])
            fused = self._one_per_content(fused, rows)
        hits = [
            self._hit(item, rows[item.memory_id], query, content, notes) for item in fused if item.memory_id in rows
        ]
        self.index.note_access([hit.name for hit in hits], now)
        return hits

    def _stale_marks(self) -> dict[int, tuple[str, str]]:
        """Memory id -> (state, summary) of what the last verification found stale or broken (none when
        ``[anchors] stale_share`` is 0)."""
        if self.config.anchors.stale_share <= 0:
            return {}
        return self._stale.current(self.conn)

    def _lowered(self, fused: builtins.list[Fused], marked: dict[int, tuple[str, str]]) -> builtins.list[Fused]:
        """``fused`` with each stale or broken memory's score lowered by ``[anchors] stale_share``, its ``why``
        saying so (``stale: path#Symbol changed in 3f2a9c1, 4 commits ago``), reordered."""
        if not any(item.memory_id in marked for item in fused):
            return fused
        share = self.config.anchors.stale_share
        lowered: builtins.list[Fused] = []
        for item in fused:
            found = marked.get(item.memory_id)
            if found is None:
                lowered.append(item)
                continue
            why = (*item.why, Match("anchors", 0, share, found[1] or found[0]))
            lowered.append(replace(item, score=round(item.score * (1 - share), 6), why=why))
        return sorted(lowered, key=lambda item: (-item.score, item.memory_id))

    def _decaying(self, recency: dict[str, float]) -> bool:
        """Whether any memory is in a channel that decays (checked once per index generation)."""
        decays = {channel for channel, half_life in recency.items() if half_life}
        if not decays:
            return False
        generation = queries.generation(self.conn)
        if self._channels is None or self._channels[0] != generation:
            self._channels = (generation, queries.channels_in_use(self.conn))
        return bool(decays & self._channels[1])

    def _reranked(
        self,
        fused: builtins.list[Fused],
        query: str,
        lexical: builtins.list[Ranked],
        filters: Filters,
        window: frozenset[int],
    ) -> builtins.list[Fused]:
        """``fused`` with its best candidates, and their neighbours in a numbered series, read again and
        ordered by the second stage's score (``memrouter.index.sqlite.rerank``; ``lexical``: the lexical list;
        ``window``: the memories a time phrase's boost lifts)."""
        from memrouter.index.sqlite.rerank import read_again, rescored

        allowed, timed_out = self.index.lexical.allowed(self.conn, filters)

        def passing(memory_id: int) -> bool:
            return memory_id in allowed and memory_id not in timed_out

        conn = self.conn
        folders = self.index.lexical.folders(conn)
        return rescored(fused, *read_again(conn, self.index.dense, folders, query, fused, lexical, passing, window))

    def _asked_again(self, fused: builtins.list[Fused], query: str, dense: bool) -> builtins.list[Fused]:
        """``fused`` with its best ``RERANK_DEPTH`` ordered by the reranking endpoint (``[rerank] url``); as it
        is when the endpoint fails (``memrouter.index.sqlite.rerank_endpoint``)."""
        from memrouter.index.sqlite.rerank import DEPTH as RERANK_DEPTH
        from memrouter.index.sqlite.rerank_endpoint import passages, reordered

        reranker = self.reranker()
        assert reranker is not None
        head = fused[:RERANK_DEPTH]
        texts = passages(self.conn, self.index.dense if dense else None, query, [item.memory_id for item in head])
        try:
            scores = reranker.scores(query, texts)
        except EndpointError as exc:
            log.warning("second stage skipped: %s", exc)
            return fused
        return reordered(head, scores, reranker.model) + fused[len(head) :]

    def reranker(self) -> EndpointReranker | None:
        """The reranking endpoint (``[rerank] url``), made on first use; None when none is configured."""
        from memrouter.embed.endpoint import EndpointReranker

        settings = self.config.rerank_endpoint
        if settings is None:
            return None
        if self._reranker is None:
            self._reranker = EndpointReranker(
                url=settings.url, model=settings.model, key=settings.key, timeout=settings.timeout
            )
        return self._reranker

    def close(self) -> None:
        """Close the reranking endpoint's connections, if it was asked."""
        if self._reranker is not None:
            self._reranker.close()

    def _candidates(
        self, query: str, mode: str, filters: Filters, pool: int
    ) -> tuple[dict[str, builtins.list[Ranked]], str | None]:
        """Each retriever's top ``pool`` for the query, filters applied inside each; and why dense search was
        left out (an embedding endpoint that is down, in hybrid mode), or None."""
        lists: dict[str, builtins.list[Ranked]] = {}
        skipped: str | None = None
        if mode in ("hybrid", "lexical"):
            lists["lexical"] = self.reader.lexical(query, filters, pool)
        if mode in ("hybrid", "semantic"):
            try:
                lists["dense"] = self.reader.dense(query, filters, pool)
            except EndpointError as exc:
                if mode == "semantic":
                    raise
                log.warning("dense search left out: %s", exc)
                skipped = str(exc)
        if mode == "hybrid" and self.config.search.weights.get("graph", 0.0) > 0:  # it walks on from lexical's best
            from memrouter.index.graph.retrieve import graph_candidates  # lexical search never loads the graph

            conn, lexical = self.conn, self.index.lexical
            lists["graph"] = graph_candidates(
                self.reader.graph_view(), query, filters, pool, lambda f: lexical.allowed(conn, f), lists["lexical"]
            )
        return lists, skipped

    def _decayed(self, fused: builtins.list[Fused], rows: dict[int, sqlite3.Row], now: float) -> builtins.list[Fused]:
        """``fused`` with each score scaled by its channel's recency decay, reordered."""
        from memrouter.core.query import iso_time

        latest = self.activity().latest(self.conn)
        recency = self.config.search.recency
        scaled: builtins.list[Fused] = []
        for item in fused:
            row = rows.get(item.memory_id)
            half_life = recency.get(str(row["channel"]), 0.0) if row is not None else 0.0
            when = latest.get(item.memory_id)
            if not half_life or when is None:
                scaled.append(item)
                continue
            age = (_seconds(iso_time(now)) - _seconds(when)) / _DAY
            if age < 1:  # decay counts whole days: what changed today is as fresh as it gets
                scaled.append(item)
                continue
            factor = 0.5 + 0.5 * 2 ** (-age / half_life)
            why = (*item.why, Match("recency", 0, round(factor, 4), f"{age:.0f} days old, half-life {half_life:g}"))
            scaled.append(replace(item, score=round(item.score * factor, 6), why=why))
        return sorted(scaled, key=lambda item: (-item.score, item.memory_id))

    def _one_per_content(self, fused: builtins.list[Fused], rows: dict[int, sqlite3.Row]) -> builtins.list[Fused]:
        """One hit per content hash, at the best rank any copy reached: the most recently changed copy."""
        if len({row["hash"] for row in rows.values()}) == len(rows):
            return fused
        latest = self.activity().latest(self.conn)
        kept: builtins.list[Fused] = []
        at: dict[str, int] = {}
        for item in fused:
            row = rows.get(item.memory_id)
            if row is None:
                continue
            place = at.get(row["hash"])
            if place is None:
                at[row["hash"]] = len(kept)
                kept.append(item)
            elif latest.get(item.memory_id, "") > latest.get(kept[place].memory_id, ""):
                kept[place] = replace(item, score=kept[place].score, why=kept[place].why)
        return kept

    def _newest(self, inside: frozenset[int], limit: int, filters: Filters, note: Match | None) -> builtins.list[Hit]:
        """A query that is only a time phrase: the window's memories passing ``filters``, latest activity first."""
        allowed, timed_out = self.index.lexical.allowed(self.conn, replace(filters, within=inside))
        latest = self.activity().latest(self.conn)
        ranked = sorted(allowed - timed_out, key=lambda mid: (latest.get(mid, ""), mid), reverse=True)[:limit]
        rows = queries.hit_rows(self.conn, ranked)
        fused = [Fused(mid, 0.0, (Match("time", rank, 0.0, latest.get(mid)),)) for rank, mid in enumerate(ranked, 1)]
        notes = (note,) if note is not None else ()
        return [self._hit(item, rows[item.memory_id], "", False, notes) for item in fused if item.memory_id in rows]

    def _hit(self, item: Fused, row: sqlite3.Row, query: str, content: bool, notes: tuple[Match, ...]) -> Hit:
        get = row.__getitem__
        return Hit(
            name=get("name"),
            title=get("title"),
            score=item.score,
            source=CANONICAL,
            channel=get("channel"),
            path=get("path"),
            hash=get("hash"),
            snippet=snippet(get("body"), query, at=item.snippet_offset) if query else get("body")[:160],
            why=(*item.why, *notes),
            kind=get("kind"),
            content=self.content_of(get("name")) if content else None,
            provenance=Provenance(
                author=get("author"),
                source=get("source"),
                created=get("created"),
                updated=get("updated"),
                confidence=get("confidence"),
                verified_by=get("verified_by"),
            ),
        )


@lru_cache(maxsize=1)
def _generic() -> frozenset[str]:
    """Terms that ask for "what there is" rather than a topic: "what changed last month" lists the month."""
    return frozenset(query_terms(" ".join(_GENERIC_WORDS)))


_GENERIC_WORDS = (
    "what", "which", "changed", "changes", "change", "new", "updated", "update", "updates", "modified", "added",
    "written", "wrote", "happened", "decided", "memories", "memory", "notes", "note", "anything", "everything",
    "show", "list", "recent", "recently", "me", "all",
)  # fmt: skip


def _inside(lists: dict[str, builtins.list[Ranked]], inside: frozenset[int]) -> builtins.list[Ranked]:
    """The candidates inside the time window, ordered by their best rank in any list."""
    best: dict[int, int] = {}
    for ranked in lists.values():
        for rank, candidate in enumerate(ranked):
            if candidate.memory_id in inside and rank < best.get(candidate.memory_id, rank + 1):
                best[candidate.memory_id] = rank
    return [Ranked(mid, 1.0, "in the time window") for mid in sorted(best, key=lambda mid: (best[mid], mid))]


def _later(moment: str, days: float) -> str:
    from memrouter.core.query import iso_time

    return iso_time(_seconds(moment) + days * _DAY)


def _seconds(moment: str) -> float:
    import calendar
    import time

    return float(calendar.timegm(time.strptime(moment, "%Y-%m-%dT%H:%M:%SZ")))
