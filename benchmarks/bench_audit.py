"""What the audit log costs a write, and what provenance on hits and the pending filter cost a search.

In one process, on a copy of ../shared/corpora/ai-agents-1026 (plus 10 memories
pending review): ``Router.edit`` of a 10 KB memory with the audit observer on
(the default) and off (the same-run baseline: ``store.observer = None``),
interleaved, p50 and p95 over N edits each; then warm lexical searches (limit 10) returning
hits with provenance, against the same searches reading only the ids (the
retriever alone, no hit rows), p50 over the query set.

Run: ``.venv/bin/python benchmarks/bench_audit.py [--runs 200]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from memrouter import Router
from memrouter.core.query import make_filters, search_filters

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ai-agents-1026"
QUERIES = ("flaky tests", "postgres migration", "agent memory", "sprint planning", "error handling", "cache")


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.95) - 1] * 1e3


def _edits(router: Router, name: str, runs: int) -> tuple[list[float], list[float]]:
    """Edit times with the audit observer on and off, interleaved so both see the same machine."""
    observer = router.store.observer
    on: list[float] = []
    off: list[float] = []
    for number in range(2 * runs):
        router.store.observer = observer if number % 2 == 0 else None
        start = time.perf_counter()
        router.edit(name, "counter: ", f"counter: {number} ", mode="literal")
        (on if number % 2 == 0 else off).append(time.perf_counter() - start)
        router.edit(name, f"counter: {number} ", "counter: ")
    router.store.observer = observer
    return on, off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project" / ".serena" / "memories"
        shutil.copytree(CORPUS, root)
        for number in range(10):
            (root / f"held/pending-{number}.md").parent.mkdir(exist_ok=True)
            (root / f"held/pending-{number}.md").write_text(
                f"---\nstatus: pending_review\n---\n# Held {number}\n\nflaky tests postgres cache {number}\n"
            )
        body = ("The deploy pipeline retries flaky steps once. " * 230)[:10_000]
        with Router.open(root=root, index_dir=Path(tmp) / "index", watch=False) as router:
            router.refresh()
            router.save(f"# Bench\n\ncounter: \n\n{body}\n", "bench/ten-kb")
            on, off = _edits(router, "bench/ten-kb", args.runs)
            (on50, on95), (off50, off95) = _percentiles(on), _percentiles(off)
            print(f"edit of a 10 KB memory, {args.runs} runs each (ms)")
            print(f"  audit on   p50 {on50:6.2f}  p95 {on95:6.2f}")
            print(f"  audit off  p50 {off50:6.2f}  p95 {off95:6.2f}   (baseline, same run)")
            print(f"  overhead   p50 {on50 - off50:+6.2f}  p95 {on95 - off95:+6.2f}")

            for query in QUERIES:  # warm the caches
                router.search(query, mode="lexical")
            hits, ids = [], []
            filters = search_filters(make_filters(), router.clock())
            for _ in range(max(1, args.runs // len(QUERIES))):
                for query in QUERIES:
                    start = time.perf_counter()
                    router.search(query, mode="lexical")
                    hits.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    router.workspace.index.lexical.search(router.workspace.conn, query, filters, limit=10)
                    ids.append(time.perf_counter() - start)
            print(f"warm lexical search, limit 10, {len(hits)} searches (ms)")
            print(f"  hits with provenance  p50 {statistics.median(hits) * 1e3:6.3f}")
            print(f"  retriever ids only    p50 {statistics.median(ids) * 1e3:6.3f}   (baseline, same run)")
            leaked = sum(hit.name.startswith("held/") for q in QUERIES for hit in router.search(q, limit=50))
            print(f"pending memories among {len(QUERIES)} searches' top 50: {leaked}")


if __name__ == "__main__":
    main()
