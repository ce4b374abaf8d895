"""The PostgreSQL index against the local SQLite index, in one run on the same files and vectors.

Starts a real PostgreSQL 18 with pgvector (``memrouter.testing.postgres_server``),
builds the local index of the corpus (embeddings included), copies it to the
database, then prints for each store:
- the first full copy to PostgreSQL and a copy with nothing changed;
- recall@5 and MRR@10 per mode on benchmarks/golden/ai-agents-1026.json,
  examples/golden.json and benchmarks/golden/multi-project.json (folders are
  context) (the PostgreSQL path must stay within 0.02 of SQLite);
- warm search p50/p95 per mode over the fixed query list (SQLite is the baseline).

Usage: python benchmarks/bench_postgres.py [--corpus DIR] [--embed minilm|hash] [--rounds N] [--sets a,b]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from memrouter.core.records import replace

HERE = Path(__file__).resolve().parent
from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts

GOLDEN = {
    "ai-agents-1026": (HERE / "golden" / "ai-agents-1026.json", None),
    "examples": (HERE.parent / "examples" / "golden.json", HERE.parent / "examples" / "memories"),
    "multi-project": (HERE / "golden" / "multi-project.json", HERE / "golden" / "multi-project" / "memories"),
}
MODES = ("lexical", "semantic", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--embed", default="minilm")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sets", default=",".join(GOLDEN), help="which evaluation sets, comma-separated")
    args = parser.parse_args()
    chosen = args.sets.split(",")
    if unknown := sorted(set(chosen) - set(GOLDEN)):
        parser.error(f"unknown sets {unknown}: choose from {', '.join(GOLDEN)}")
    if not args.corpus.is_dir():
        print(f"corpus {args.corpus} not found; skipping")
        return
    from memrouter import Router
    from memrouter.config.settings import Config
    from memrouter.ops.evaluation import evaluate, load_golden
    from memrouter.testing.postgres_server import running_postgres

    work = Path(tempfile.mkdtemp(prefix="bench-postgres-"))
    try:
        with running_postgres() as server:
            print(f"PostgreSQL 18 + pgvector at {server.url} (pid {server.pid}); embedder {args.embed}")
            for label in chosen:
                golden, root = GOLDEN[label]
                corpus = root or args.corpus
                loaded = Config.load(root=corpus, index_dir=work / label)
                keyed = replace(loaded.index, project=label)  # the corpora have no git remote to name them
                local = replace(loaded, embedder=args.embed, index=keyed)
                shared = replace(local, index=replace(keyed, url=server.url))
                with Router(local, watch=False) as sqlite_router:
                    started = time.perf_counter()
                    sqlite_router.refresh(embed=True)
                    dense = sqlite_router.status()["dense"]
                    print(f"\n{label}: {dense['embedded_memories']} memories, {dense['chunks']} chunks, "
                          f"local index built in {time.perf_counter() - started:.1f} s")  # fmt: skip
                    started = time.perf_counter()
                    pushed = sqlite_router.publish(server.url)
                    first = time.perf_counter() - started
                    started = time.perf_counter()
                    again = sqlite_router.publish(server.url)
                    print(f"  copy to PostgreSQL: {first:.2f} s for {pushed['added']} memories; "
                          f"with nothing changed {(time.perf_counter() - started) * 1000:.0f} ms "
                          f"({again['unchanged']} unchanged)")  # fmt: skip
                    with Router(shared, watch=False) as pg_router:
                        queries = load_golden(golden)
                        for mode in MODES:
                            line = []
                            for store, router in (("sqlite", sqlite_router), ("postgres", pg_router)):
                                report = evaluate(
                                    lambda q, r=router, m=mode: [h.name for h in r.search(q, 10, m)], queries
                                )
                                summary = report.summary()
                                line.append(
                                    f"{store} recall@5 {summary['recall@5']:.3f} MRR@10 {summary['mrr@10']:.3f}"
                                )
                            print(f"  {mode:8} quality: " + "  |  ".join(line))
                        if root is not None:
                            continue
                        for mode in MODES:
                            timings = {}
                            for store, router in (("sqlite", sqlite_router), ("postgres", pg_router)):
                                for query in QUERIES:  # warm up
                                    router.search(query, 10, mode)
                                samples = []
                                for _ in range(args.rounds):
                                    for query in QUERIES:
                                        started = time.perf_counter()
                                        router.search(query, 10, mode)
                                        samples.append((time.perf_counter() - started) * 1000)
                                timings[store] = percentiles(samples)
                            (s50, s95), (p50, p95) = timings["sqlite"], timings["postgres"]
                            print(f"  {mode:8} latency: sqlite p50 {s50:.2f} ms p95 {s95:.2f} ms  |  "
                                  f"postgres p50 {p50:.2f} ms p95 {p95:.2f} ms ({p50 / s50:.1f}x p50)")  # fmt: skip
                        assert not [w for w in pg_router.warnings if "PostgreSQL" in w], pg_router.warnings
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
