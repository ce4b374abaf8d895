"""memrouter with the real Graphiti (graphiti-core 0.31.1) on FalkorDB: sync and augmented-search overhead.

Runs in the Graphiti venv built by ``make interop`` (Python 3.12)::

    interop/.work/graphiti-venv/bin/python benchmarks/bench_graphiti.py [--corpus ai-agents-1026] [--embedder hash]

Starts a FalkorDB server on a free loopback port, copies the corpus into a
temporary git project and measures in one process:

- ``Router.sync()`` of the corpus into Graphiti (time, episodes, entities,
  edges) and the no-op re-sync;
- search latency, p50/p95 over rare-word queries (found in at most three
  files, so the augmenter is always asked): canonical only (the baseline),
  Graphiti's own ``search_`` alone, the backend's search (``search_`` plus the
  episodes that mention the entities found), and the default search with the
  Graphiti augmenter merged; the overhead is the difference;
- the same search with FalkorDB stopped (the cached failure) against the baseline.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "interop" / "graphiti"))

from _common import rare_words, show_latency, timed_queries  # noqa: E402
from conftest import CORPORA, FalkorServer, graphiti_toml  # noqa: E402

from memrouter import Router  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="ai-agents-1026")
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        server = FalkorServer(base / "falkordb")
        server.start()
        try:
            project = base / "project"
            root = project / ".serena" / "memories"
            shutil.copytree(CORPORA / args.corpus, root)
            toml = graphiti_toml(server.port, "bench").replace('"hash"', f'"{args.embedder}"')
            (project / "memrouter.toml").write_text(toml + '[search]\nmode = "lexical"\n', encoding="utf-8")
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
            with Router.open(root=root, index_dir=base / "index", watch=False) as router:
                router.refresh()
                count = len(router.list())
                started = time.perf_counter()
                report = router.sync()[0]
                seconds = time.perf_counter() - started
                assert report.ok, (report.error, list(report.failed.items())[:3])
                backend = router.backend("graphiti")
                counts = backend.call(backend.store.counts())
                print(f"Graphiti sync of {args.corpus} ({count} memories, embedder {args.embedder}): {seconds:.1f} s")
                print(f"  episodes {counts['episodes']}  entities {counts['entities']}  edges {counts['edges']}")
                started = time.perf_counter()
                again = router.sync()[0]
                print(f"  no-op re-sync: {(time.perf_counter() - started) * 1000:.0f} ms, "
                      f"{again.remote_calls} remote calls")  # fmt: skip
                queries = rare_words(sorted(root.rglob("*.md")), args.queries)
                limit = 10
                router.search(queries[0], limit=limit)  # warm the index and the store
                print(f"search over {len(queries)} rare-word queries, limit {limit} (PRELIMINARY: shared machine)")
                canonical = timed_queries(lambda q: router.search(q, limit=limit, origin="canonical"), queries)
                own = timed_queries(lambda q: backend.call(backend.store.raw_search(q, limit)), queries)
                store = timed_queries(lambda q: backend.call(backend.store.search(q, limit)), queries)
                merged = timed_queries(lambda q: router.search(q, limit=limit), queries)
                show_latency("canonical only (baseline)", canonical)
                show_latency("Graphiti search_ alone (its own query time)", own)
                show_latency("backend search (search_ + episodes of entities)", store)
                show_latency("default: canonical + Graphiti augmenter", merged)
                extra = statistics.median(merged) - statistics.median(canonical)
                print(f"  augmenter up: +{extra:.2f} ms p50 over the baseline "
                      f"(Graphiti's own: {statistics.median(own):.2f} ms)")  # fmt: skip
                server.stop()
                router.search(queries[0], limit=limit)  # the failure is noted and cached
                down = timed_queries(lambda q: router.search(q, limit=limit), queries)
                base_again = timed_queries(lambda q: router.search(q, limit=limit, origin="canonical"), queries)
                show_latency("default with FalkorDB down (cached failure)", down)
                show_latency("canonical only, same moment", base_again)
                print(f"  augmenter down: +{statistics.median(down) - statistics.median(base_again):.3f} ms p50")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
