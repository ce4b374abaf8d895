"""PostgreSQL lexical search two ways against the SQLite path: memrouter's BM25F over postings, and tsvector.

For each golden set, in one run on the same files:
- SQLite: the local index's BM25F (``--mode lexical``), the baseline;
- PostgreSQL BM25F: the same scores computed in SQL over the postings table
  (what memrouter uses, ``pgindex.store``);
- PostgreSQL tsvector: weighted ``tsvector`` columns (name and title A, tags
  B, body D; the ``english`` configuration) with a GIN index, the query's
  words OR-ed into a ``tsquery`` and ranked by ``ts_rank_cd``.
It prints recall@5 and MRR@10 per set and the warm p50/p95 of each over the
fixed query list. The issue's rule: keep the variant within 0.02 of SQLite.

    .venv/bin/python benchmarks/bench_pg_tsvector.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from pathlib import Path

from memrouter.core.records import replace

HERE = Path(__file__).resolve().parent
from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts

SHARED = HERE.parents[1] / "shared" / "corpora"
GOLDEN = {
    "ai-agents-1026": (HERE / "golden" / "ai-agents-1026.json", CORPUS),
    "ai-agents-466": (HERE / "golden" / "ai-agents-466.json", SHARED / "ai-agents-466"),
    "examples": (HERE.parent / "examples" / "golden.json", HERE.parent / "examples" / "memories"),
}
WORD = re.compile(r"[^\W_]+")

_TSVECTOR = """
CREATE TABLE ts_memories (project text, name text, doc tsvector, PRIMARY KEY (project, name));
CREATE INDEX ts_memories_doc ON ts_memories USING gin (doc);
"""
_FILL = """
INSERT INTO ts_memories (project, name, doc)
SELECT project, name,
       setweight(to_tsvector('english', replace(name, '/', ' ')), 'A') || setweight(to_tsvector('english', title), 'A')
       || setweight(to_tsvector('english', array_to_string(tags, ' ')), 'B') || setweight(to_tsvector('english', body), 'D')
FROM memories WHERE project = %s
"""
_SEARCH = """
SELECT name FROM ts_memories, to_tsquery('english', %(query)s) q
WHERE project = %(project)s AND doc @@ q ORDER BY ts_rank_cd(doc, q) DESC, name LIMIT %(limit)s
"""


def tsquery(text: str) -> str:
    """The query's words OR-ed (each quoted, so no word is read as an operator)."""
    words = [w.lower() for w in WORD.findall(text)]
    return " | ".join("'" + w.replace("'", "") + "'" for w in dict.fromkeys(words)) or "''"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import psycopg

    from memrouter import Router
    from memrouter.config.settings import Config
    from memrouter.ops.evaluation import evaluate, load_golden
    from memrouter.testing.postgres_server import running_postgres

    work = Path(tempfile.mkdtemp(prefix="bench-tsvector-"))
    try:
        with running_postgres() as server, psycopg.connect(server.url, autocommit=True) as conn:
            print(f"PostgreSQL 18 at {server.url}")
            for label, (golden, corpus) in GOLDEN.items():
                if not corpus.is_dir():
                    print(f"{label}: {corpus} not found; skipped")
                    continue
                loaded = Config.load(root=corpus, index_dir=work / label)
                keyed = replace(loaded.index, project=label)
                local = replace(loaded, embedder="hash", index=keyed)
                shared = replace(local, index=replace(keyed, url=server.url))
                with Router(local, watch=False) as sqlite_router:
                    sqlite_router.refresh()
                    sqlite_router.publish(server.url)
                    if label == next(iter(GOLDEN)):
                        conn.execute(_TSVECTOR)
                    conn.execute(_FILL, (label,))
                    conn.execute("ANALYZE ts_memories")

                    def ts_search(query: str, limit: int = 10, project: str = label) -> list[str]:
                        rows = conn.execute(_SEARCH, {"query": tsquery(query), "project": project, "limit": limit})
                        return [str(row[0]) for row in rows]

                    with Router(shared, watch=False) as pg_router:
                        ways = {
                            "sqlite bm25f": lambda q, r=sqlite_router: [h.name for h in r.search(q, 10, "lexical")],
                            "postgres bm25f": lambda q, r=pg_router: [h.name for h in r.search(q, 10, "lexical")],
                            "postgres tsvector": ts_search,
                        }
                        queries = load_golden(golden)
                        print(f"\n{label}: {len(queries)} questions")
                        base = None
                        for way, search in ways.items():
                            summary = evaluate(search, queries).summary()
                            r5, mrr = summary["recall@5"], summary["mrr@10"]
                            base = base or (r5, mrr)
                            print(f"  {way:18} recall@5 {r5:.3f} MRR@10 {mrr:.3f}  "
                                  f"(against SQLite {r5 - base[0]:+.3f} / {mrr - base[1]:+.3f})")  # fmt: skip
                        if label != "ai-agents-1026":
                            continue
                        for way, search in ways.items():
                            for query in QUERIES:
                                search(query)
                            samples = []
                            for _ in range(args.rounds):
                                for query in QUERIES:
                                    started = time.perf_counter()
                                    search(query)
                                    samples.append((time.perf_counter() - started) * 1000)
                            p50, p95 = percentiles(samples)
                            print(f"  {way:18} warm p50 {p50:.2f} ms p95 {p95:.2f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
