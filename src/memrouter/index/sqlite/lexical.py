"""Full-text retrieval: field-weighted BM25 (BM25F) over name, title, tags and body.

The postings (per term: memories and weighted term frequencies, see
``postings``) live in the index database, written in the same transaction as
the memory row. Scoring runs in
Python over the postings of the query's terms only, cached per index
generation, which keeps a warm search well under a millisecond on a
thousand-file corpus (SQLite FTS5's ``bm25()`` measured 1.5-3 ms per query on
the same data, because it decodes position lists for every match).

A query is data, never syntax: it is cut into the same tokens as the
documents, so quotes, operators and SQL fragments are just words. Filters are
SQL conditions over the memory rows, applied before the top-k cut, so a
filter never empties the candidate pool.
"""

from __future__ import annotations

import heapq
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from operator import itemgetter

from memrouter.core.effect import TIMED_RULES, out_of_effect
from memrouter.core.model import Filters, Memory
from memrouter.index.folders import FOLDER_SHARE, FolderContext
from memrouter.index.fusion import Ranked
from memrouter.index.sqlite.filters import TIMED_CONDITION, TIMED_FIELDS, filter_sql
from memrouter.index.sqlite.lexical_large import LARGE_CORPUS, LargeScorer
from memrouter.index.sqlite.postings import decode
from memrouter.index.text import STOP_WORDS, query_terms, tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memrouter.index.sqlite.lexical_large import LargeScorer

__all__ = [
    "Allowed",
    "FIELD_WEIGHTS",
    "LexicalIndex",
    "document_terms",
    "snippet",
]

# BM25F weights of the fields: a word in the name or title counts more.
FIELD_WEIGHTS = {"name": 4.0, "title": 3.0, "tags": 3.0, "body": 1.0}
K1 = 1.2
B = 0.75


def document_terms(memory: Memory) -> tuple[dict[str, float], float]:
    """Weighted term frequencies and the weighted length of one memory."""
    fields = {
        "name": memory.name.replace("/", " "),
        "title": memory.title,
        "tags": " ".join(memory.tags),
        "body": memory.body,
    }
    weighted: dict[str, float] = {}
    length = 0.0
    for field, text in fields.items():
        weight = FIELD_WEIGHTS[field]
        counts = Counter(tokens(text))
        length += weight * sum(counts.values())
        for term, count in counts.items():
            weighted[term] = weighted.get(term, 0.0) + weight * count
    return weighted, length


# ``LexicalIndex.allowed``: (ids passing the filters apart from time, ids out of effect now).
Allowed = Callable[[sqlite3.Connection, Filters], tuple[set[int], set[int]]]


class LexicalIndex:
    """BM25F search over the postings table, with per-generation caches.

    For each query term seen, the cache holds every memory's full score
    contribution (idf and length normalisation included), so a warm query is
    a few dictionary merges and one sort. The caches are tied to the index
    generation (a counter bumped in every transaction that changes
    memories), so a change by this process or any other is seen on the next
    query.
    """

    def __init__(self, *, large_from: int = LARGE_CORPUS, folder_share: float = FOLDER_SHARE) -> None:
        """``large_from``: the memory count from which scoring runs on numpy arrays (``lexical_large``);
        ``folder_share``: what a folder's overview lends its memories (``folders``; 0: nothing)."""
        self.large_from = large_from
        self.folder_share = folder_share
        self._generation: str | None = None
        self._contributions: dict[str, dict[int, float]] = {}
        self._df: dict[str, int] = {}  # per term seen: how many memories hold it (lending aside)
        self._norms: dict[int, float] = {}
        # (filters apart from the time) -> (ids passing, time bounds of the ids that have any)
        # Per filter key: the ids passing the filters apart from time, and the time fields of those that set any.
        self._filtered: dict[tuple[object, ...], tuple[set[int], dict[int, dict[str, str | None]]]] = {}
        self._count = 0
        self._large: LargeScorer | None = None  # numpy scoring from LARGE_CORPUS memories on
        self._folders = FolderContext(())  # what each folder's overview lends its memories (``folders``)

    def _sync(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        generation = row[0] if row else "0"
        if generation == self._generation:
            return
        self._contributions.clear()
        self._df.clear()
        self._filtered.clear()
        lengths = conn.execute("SELECT id, length, name FROM memories").fetchall()
        self._count = len(lengths)
        average = (sum(row[1] for row in lengths) / self._count) if self._count else 1.0
        average = average or 1.0
        self._norms = {mid: K1 * (1 - B + B * length / average) for mid, length, _ in lengths}
        self._folders = FolderContext(((mid, name) for mid, _, name in lengths if "/" in name), self.folder_share)
        self._large = None
        if self._count >= self.large_from:
            self._large = LargeScorer(self._norms, self._count, K1)
        self._generation = generation

    def _load(self, conn: sqlite3.Connection, terms: list[str]) -> None:
        large = self._large
        known = self._df
        missing = list(dict.fromkeys(term for term in terms if term not in known))
        if not missing:
            return
        marks = ", ".join("?" * len(missing))
        found = dict(conn.execute(f"SELECT term, postings FROM terms WHERE term IN ({marks})", missing))
        if large is not None:
            for term in missing:
                self._df[term] = large.load(term, found.get(term), self._folders)
            return
        norms, total = self._norms, self._count
        for term in missing:
            blob = found.get(term)
            if blob is None:
                self._contributions[term] = {}
                self._df[term] = 0
                continue
            ids, tfs = decode(blob, term)
            df = self._df[term] = len(ids)
            lift = math.log(1.0 + (total - df + 0.5) / (df + 0.5)) * (K1 + 1.0)
            contributions = {
                memory_id: lift * tf / (tf + norms[memory_id])
                for memory_id, tf in zip(ids, tfs, strict=False)
                if memory_id in norms
            }
            self._contributions[term] = self._folders.lend(contributions) if self._folders else contributions

    def folders(self, conn: sqlite3.Connection) -> FolderContext:
        """What each folder's overview lends its memories, for the current index generation (``folders``)."""
        self._sync(conn)
        return self._folders

    def allowed(self, conn: sqlite3.Connection, filters: Filters) -> tuple[set[int], set[int]]:
        """The ids passing ``filters`` apart from time, and those out of effect at ``filters.now``.

        The first set and the time bounds are cached per index generation (a
        default search filters by validity every time, and ``now`` moves); the
        other retrievers use this too, so one search filters once.
        """
        self._sync(conn)
        key = (filters.channels, filters.kinds, filters.scopes, filters.statuses, filters.tags, filters.prefix,
               filters.now is not None, filters.archived, filters.records, filters.pending)  # fmt: skip
        cached = self._filtered.get(key)
        if cached is None:
            where, params = filter_sql(filters, timed=False)
            ids = {row[0] for row in conn.execute(f"SELECT m.id FROM memories m WHERE 1{where}", params)}
            bounds: dict[int, dict[str, str | None]] = {}
            if filters.now is not None:  # the time rules' fields of every memory that sets one
                # read from the partial index of the memories that set a time (migration 0503), not the rows
                rows = conn.execute(f"SELECT id, {', '.join(TIMED_FIELDS)} FROM memories WHERE {TIMED_CONDITION}")
                bounds = {row[0]: dict(zip(TIMED_FIELDS, row[1:], strict=True)) for row in rows}
            cached = self._filtered[key] = (ids, bounds)
        ids, bounds = cached
        if filters.within is not None:
            ids = ids & filters.within
        now = filters.now
        if now is None or not bounds:
            return ids, set()
        return ids, {
            memory_id
            for memory_id, fields in bounds.items()
            if out_of_effect(fields, now, rules=TIMED_RULES) is not None
        }

    def search(self, conn: sqlite3.Connection, query: str, filters: Filters, limit: int = 50) -> list[Ranked]:
        """The ``limit`` best memories for ``query`` among those passing ``filters`` (BM25F score)."""
        terms = query_terms(query)
        if not terms:
            return []
        self._sync(conn)
        self._load(conn, terms)
        if self._large is not None:
            allowed, timed_out = self.allowed(conn, filters) if filters.restricts else (None, set())
            return [Ranked(mid, score) for mid, score in self._large.top(terms, limit, allowed, timed_out)]
        parts = sorted((self._contributions[term] for term in terms), key=len, reverse=True)
        scores = dict(parts[0])
        for part in parts[1:]:
            get = scores.get
            for memory_id, value in part.items():
                scores[memory_id] = get(memory_id, 0.0) + value
        if not filters.restricts:
            best = heapq.nlargest(limit, scores.items(), key=itemgetter(1))
            return [Ranked(memory_id, score) for memory_id, score in best]
        # Most memories pass the usual filters (validity, review): take the best few, drop what does not
        # pass, and look deeper only when too few are left, rather than testing every scored memory.
        allowed, timed_out = self.allowed(conn, filters)
        depth = 2 * limit + 8
        while True:
            top = heapq.nlargest(depth, scores.items(), key=itemgetter(1))
            kept = [item for item in top if item[0] in allowed and item[0] not in timed_out]
            if len(kept) >= limit or depth >= len(scores):
                return [Ranked(memory_id, score) for memory_id, score in kept[:limit]]
            depth *= 8

    def coverage(self, conn: sqlite3.Connection, query: str, memory_id: int) -> float:
        """The share of ``query``'s distinct terms, each weighted by its idf, that memory ``memory_id``
        holds: 1 when it has them all, near 0 when it lacks the rare ones (a term in no memory weighs most)."""
        return self.coverages(conn, query, [memory_id])[0]

    def coverages(self, conn: sqlite3.Connection, query: str, memory_ids: list[int]) -> list[float]:
        """``coverage`` of each of ``memory_ids``, the query's terms and their idfs read once."""
        terms = list(dict.fromkeys(query_terms(query)))
        if not terms:
            return [0.0] * len(memory_ids)
        self._sync(conn)
        self._load(conn, terms)
        weights: list[tuple[float, Any]] = []
        for term in terms:
            df = self._df[term]
            idf = math.log(1.0 + (self._count - df + 0.5) / (df + 0.5))
            # "holds" counts what its folder's overview lends (``folders``); the idf does not
            holders = self._large.terms[term][0] if self._large is not None else self._contributions[term]
            weights.append((idf, holders))
        total = sum(idf for idf, _ in weights)
        if not total:
            return [0.0] * len(memory_ids)
        found = []
        for memory_id in memory_ids:
            if self._large is not None:
                held = sum(idf for idf, holders in weights if bool((holders == memory_id).any()))
            else:
                held = sum(idf for idf, holders in weights if memory_id in holders)
            found.append(held / total)
        return found


SNIPPET_SCAN = 8000


def matched_words(query: str, text: str) -> list[str]:
    """The words of ``text`` a snippet would highlight for ``query`` (each once, lower-cased, in order)."""
    pattern = _highlighter(query)
    if pattern is None:
        return []
    return list(dict.fromkeys(found.lower() for found in pattern.findall(text)))


@lru_cache(maxsize=256)
def _highlighter(query: str) -> re.Pattern[str] | None:
    """A pattern finding words that start with a query word or its stem (C-speed scan)."""
    words = [w.lower() for w in re.findall(r"[^\W_]+", query) if w.lower() not in STOP_WORDS]
    words = words or [w.lower() for w in re.findall(r"[^\W_]+", query)]
    stems = {t for t in query_terms(query) if len(t) > 1}
    alternatives = sorted({*words, *stems}, key=len, reverse=True)[:64]
    if not alternatives:
        return None
    # Short words must match whole; longer ones may be the start of a word.
    whole = [re.escape(a) for a in alternatives if len(a) <= 3]
    start = [re.escape(a) for a in alternatives if len(a) > 3]
    parts = ([rf"(?:{'|'.join(start)})[^\W_]*"] if start else []) + ([rf"(?:{'|'.join(whole)})\b"] if whole else [])
    return re.compile(rf"\b(?:{'|'.join(parts)})", re.IGNORECASE)


def snippet(body: str, query: str, width: int = 160, *, at: int | None = None) -> str:
    """A short window of ``body`` around the first query word, matches in ``**``.

    ``at`` starts the window at that offset instead (a hit found by meaning:
    its best chunk). Highlighting is approximate (a word matches when it
    starts with a query word or its stem); ranking never depends on it.
    """
    pattern = _highlighter(query)
    if at is not None and 0 <= at < len(body):
        start = at
    else:
        # Bounded: a hit found by meaning alone may not contain the words at all,
        # and scanning a long body to learn that costs more than the search.
        first = pattern.search(body, 0, SNIPPET_SCAN) if pattern else None
        if first is None:
            text = " ".join(body[: width * 2].split())
            return text[:width] + ("…" if len(text) > width else "")
        start = max(0, first.start() - width // 3)
    end = min(len(body), start + width)
    # Do not cut words at the window's edges.
    while start > 0 and body[start - 1].isalnum():
        start -= 1
    while end < len(body) and body[end].isalnum():
        end += 1
    marked = pattern.sub(lambda m: f"**{m.group()}**", body[start:end]) if pattern else body[start:end]
    text = " ".join(marked.split())
    return ("…" if start > 0 else "") + text + ("…" if end < len(body) else "")
