"""BM25F in SQL over one project's postings: the SQLite path's scores, with a pruned scan for common words.

The scoring is ``memrouter.index.sqlite.lexical``'s (the same field-weighted term
frequencies, k1 and b), so both stores rank alike. The project's statistics
and its terms' document frequencies are kept by each push
(``scope.Writer.statistics``), and each posting carries its memory's length,
so only the query terms' postings are read; the best ``depth`` memories are
joined to their rows (and filters) last.

A word held by very many memories would read all of its postings. So a
search first reads each word's ``cap`` best postings by impact (their share
of BM25's saturated, length-normalised term frequency, an index order kept
by each push), ranks the memories those reach, and scores the best ``depth``
of them exactly. When a word is held by more than ``cap`` memories, that
ranking may miss a memory; a second pass makes the answer exact again
(MaxScore): the ``limit``-th exact score found is a floor the answer must
reach, each word can add at most its idf times ``k1 + 1``, so the commonest
words, whose bounds sum below the floor, cannot lift a memory that has none
of the other words. Only the other words' postings are read whole; each
memory they reach whose bound reaches the floor is scored exactly. That
pass runs when those words hold at most ``EXACT_PASS_POSTINGS`` postings;
past that (a question of common words only) the first pass's answer stands,
and a memory reached only by common words' lesser postings may be missed
(``benchmarks/bench_pg_scale.py`` measures how close it stays to the exact
scan). ``cap=None`` reads every posting in one pass; so does a search whose
folders lend (below).

Folders are context (``memrouter.index.folders``): for each query term a
memory scores the larger of its own contribution and ``share`` of its
overview's (``memories.overview_id``), never both.
"""

from __future__ import annotations

from typing import Any

from memrouter.core.model import Filters
from memrouter.index.postgres.filters import filter_sql
from memrouter.index.sqlite.lexical import K1, B

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.index.postgres.scope import ProjectScope

__all__ = ["EXACT_PASS_POSTINGS", "POSTINGS_CAP", "search"]

# Postings read per query word, best impact first (see the module docstring).
POSTINGS_CAP = 2000
# The exact second pass runs when the words it must read whole hold at most this many postings in all. At a
# million chunks (``bench_pg_scale.py``): 5,000 keeps p95 at 45 ms; 20,000 made p95 198 ms and no limit
# 258 ms, more than reading every posting in one pass (164-201 ms).
EXACT_PASS_POSTINGS = 5_000

_STATISTICS = """
WITH st AS (SELECT s.memories::float8 AS n, s.avgdl FROM {project} s),
q AS (SELECT t.term, t.df, ln(1.0 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf FROM {terms} t CROSS JOIN st
      WHERE t.term = ANY(%(terms)s)),"""
_CONTRIBUTION = f"q.idf * {K1 + 1.0} * p.tf / (p.tf + {K1} * (1 - {B} + {B} * p.length / st.avgdl))"
_EVERY_POSTING = "{postings} p JOIN q ON q.term = p.term CROSS JOIN st"
_BEST_POSTINGS = (
    "q CROSS JOIN LATERAL (SELECT p.memory_id, p.term, p.tf, p.length FROM {postings} p WHERE p.term = q.term "
    "ORDER BY p.impact DESC LIMIT %(cap)s) p CROSS JOIN st"
)
# What a borrower gains per term over its own contribution: the overview's share, where that is more.
_LENT = """lent AS (
    SELECT b.id AS memory_id, %(share)s * o.c - coalesce(mine.c, 0.0) AS c
    FROM own o JOIN {memories} b ON b.overview_id = o.memory_id
    LEFT JOIN own mine ON mine.memory_id = b.id AND mine.term = o.term
),"""
# ``most``: the most postings any query word has (is the pruned first pass exact?).
_RESULT = """
SELECT m.name, s.score, (SELECT max(df) FROM q) AS most FROM scored s JOIN {memories} m ON m.id = s.memory_id
WHERE true{where}
ORDER BY s.score DESC, m.name LIMIT %(limit)s
"""


def _statement(*, pruned: bool, lend: bool) -> str:
    source = _BEST_POSTINGS if pruned else _EVERY_POSTING
    own = f"own AS (SELECT p.memory_id, p.term, {_CONTRIBUTION} AS c FROM {source}),"
    every = "SELECT memory_id, c FROM own" + (" UNION ALL SELECT memory_id, c FROM lent WHERE c > 0" if lend else "")
    # Without pruning these are the scores; with it, the memories to score exactly.
    best = (
        f"{'ranked' if pruned else 'scored'} AS (SELECT memory_id, sum(c) AS score FROM ({every}) u "
        "GROUP BY memory_id ORDER BY score DESC LIMIT %(depth)s)"
    )
    head = f"{_STATISTICS}\n{own}\n{_LENT if lend else ''}\n{best}"
    if not pruned:
        return head + _RESULT
    # The ranked memories scored exactly: every posting of every query term, and what the overview lends;
    # when no query word has more postings than the cap, the ranking read them all and is exact already.
    borrowed = (
        f"UNION ALL SELECT r.memory_id, p.term, %(share)s * {_CONTRIBUTION} AS c FROM ranked r "
        "JOIN {memories} m ON m.id = r.memory_id JOIN {postings} p ON p.memory_id = m.overview_id "
        "JOIN q ON q.term = p.term CROSS JOIN st"
        if lend
        else ""
    )
    return f"""{head},
exact AS (
    SELECT r.memory_id, p.term, {_CONTRIBUTION} AS c FROM ranked r
    JOIN {{postings}} p ON p.memory_id = r.memory_id JOIN q ON q.term = p.term CROSS JOIN st
    {borrowed}
),
scored AS (
    SELECT memory_id, score FROM ranked WHERE (SELECT max(df) FROM q) <= %(cap)s
    UNION ALL
    SELECT memory_id, sum(c) FROM (SELECT memory_id, max(c) AS c FROM exact GROUP BY memory_id, term) t
    WHERE (SELECT max(df) FROM q) > %(cap)s GROUP BY memory_id
){_RESULT}"""


_STATEMENTS = {
    (pruned, lend): _statement(pruned=pruned, lend=lend) for pruned in (False, True) for lend in (False, True)
}


# The exact pass of a pruned search: every posting of the essential words, each memory they reach whose
# bound (its essential score plus the other words' largest contributions) reaches the floor (and passes the
# filters) scored over the other words from their index, per memory.
_MAXSCORE = f"""{_STATISTICS}
ess AS (
    SELECT p.memory_id, sum({_CONTRIBUTION}) AS s FROM {{postings}} p JOIN q ON q.term = p.term CROSS JOIN st
    WHERE p.term = ANY(%(essential)s) GROUP BY p.memory_id
),
scored AS (
    SELECT e.memory_id, e.s + coalesce((
        SELECT sum({_CONTRIBUTION}) FROM {{postings}} p JOIN q ON q.term = p.term CROSS JOIN st
        WHERE p.memory_id = e.memory_id AND p.term = ANY(%(rest)s)), 0.0) AS score
    FROM ess e JOIN {{memories}} m ON m.id = e.memory_id WHERE e.s + %(slack)s >= %(floor)s{{where}}
    ORDER BY score DESC LIMIT %(depth)s
){_RESULT}"""
_FREQUENCIES = (
    "SELECT t.term, t.df, s.memories AS n FROM {terms} t CROSS JOIN {project} s WHERE t.term = ANY(%(terms)s)"
)


def search(
    scope: ProjectScope,
    terms: list[str],
    filters: Filters,
    limit: int,
    within: list[str] | None = None,
    *,
    share: float = 0.0,
    cap: int | None = POSTINGS_CAP,
    exact_pass: int = EXACT_PASS_POSTINGS,
) -> list[tuple[str, float]]:
    """The ``limit`` best memories by BM25F for the (already tokenised) ``terms``: (name, score).

    ``share``: what a folder's overview lends its memories (0: nothing); ``cap``: postings read per word
    in the first pass (None: all, in one pass); ``exact_pass``: the most postings the exact pass reads.
    """
    if not terms:
        return []
    where, params = filter_sql(filters, within)
    values: dict[str, Any] = {**params, "terms": terms, "limit": limit, "share": share, "cap": cap}
    lend = share > 0
    prune = cap is not None and not lend
    # Ties at the depth's edge: a memory whose score equals the last one kept may be cut, so the depth
    # is a few times the limit; with filters it widens until enough memories pass them, the last time
    # over every posting.
    depths: tuple[int | None, ...] = (limit * 4, limit * 64, None) if where else (limit * 4,)
    rows: list[dict[str, Any]] = []
    pruned = False
    for depth in depths:
        pruned = prune and depth is not None
        sql = _STATEMENTS[pruned, lend].replace("{where}", where)
        rows = scope.rows(sql, {**values, "depth": depth})
        if len(rows) >= limit:
            break
    if pruned and len(rows) >= limit and rows[0]["most"] > cap:  # a word's postings were cut: the exact pass
        rows = _exact(scope, rows, where, {**values, "depth": limit * 4}, exact_pass) or rows
    return [(row["name"], float(row["score"])) for row in rows]


def _exact(
    scope: ProjectScope, found: list[dict[str, Any]], where: str, values: dict[str, Any], budget: int
) -> list[dict[str, Any]] | None:
    """The exact top of a pruned search that cut a word's postings (see the module docstring); None when
    the words to read whole hold more than ``budget`` postings."""
    import math

    frequencies = scope.rows(_FREQUENCIES, values)
    bounds = sorted(
        (math.log(1.0 + (row["n"] - row["df"] + 0.5) / (row["df"] + 0.5)) * (K1 + 1.0), row["term"])
        for row in frequencies
    )
    floor = float(found[values["limit"] - 1]["score"]) * (1 - 1e-9)
    slack, rest = 0.0, []
    for bound, term in bounds:  # the commonest words while their bounds together stay below the floor
        if slack + bound >= floor:
            break
        slack += bound
        rest.append(term)
    essential = [term for _, term in bounds[len(rest) :]]
    if sum(row["df"] for row in frequencies if row["term"] in essential) > budget:
        return None  # too dear: the first pass's answer stands
    return scope.rows(
        _MAXSCORE.replace("{where}", where),
        {**values, "essential": essential, "rest": rest, "slack": slack, "floor": floor},
    )
