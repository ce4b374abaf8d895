"""memrouter with the real Pixeltable (0.7.21) or the real Hindsight (1.1.0): sync time, augmenter p50, overhead.

Pixeltable runs in the Pixeltable venv built by ``make interop`` (in-process, on
its own PostgreSQL); Hindsight's server runs from the Hindsight venv, with
``memrouter embed-serve`` for its embeddings and the fake OpenAI-compatible LLM
for its retain step, while memrouter runs here::

    interop/.work/pixeltable-venv/bin/python benchmarks/bench_stores.py pixeltable [--corpus ai-agents-1026]
    .venv/bin/python benchmarks/bench_stores.py hindsight [--corpus ai-agents-1026]

Copies the corpus into a temporary git project and measures in one process:

- ``Router.sync()`` of the corpus into the store (wall time), and the no-op re-sync;
- the augmenter's own query (the backend's ``search``), p50/p95 over rare-word queries;
- the overhead on a hybrid search (the default mode) and on a lexical one, with the service up and with it
  down (its failure cached), against canonical-only searches of the same queries in the same moment; the
  queries are rare words, so the files return fewer hits than the limit and the augmenter is asked.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"

from _common import rare_words, show_latency, timed_queries  # noqa: E402

from memrouter import Router  # noqa: E402

LIMIT = 10


@contextmanager
def pixeltable(base: Path, embedder: str) -> Iterator[tuple[str, Callable[[], None]]]:
    """A Pixeltable home: the backend's configuration and how to take it down (its PostgreSQL stopped)."""
    sys.path.insert(0, str(ROOT / "interop" / "pixeltable"))
    from conftest import PixeltableHome, pixeltable_toml

    home = PixeltableHome()
    try:
        yield pixeltable_toml(home.path, "bench.memories", embedder), home.stop
    finally:
        home.remove()


@contextmanager
def hindsight(base: Path, embedder: str) -> Iterator[tuple[str, Callable[[], None]]]:
    """A Hindsight server (its pg0, embed-serve, the fake LLM): the configuration and how to stop it."""
    sys.path.insert(0, str(ROOT / "interop" / "tests"))
    from hindsight_peer import Pg0, start_hindsight
    from interop_peers import EmbedServer

    from memrouter.testing.fake_llm import FakeLLM

    with ExitStack() as stack:
        postgres = Pg0()
        stack.callback(postgres.stop)
        postgres.start()
        (base / "embed").mkdir()
        embeddings = EmbedServer(base / "embed", embedder)
        stack.callback(embeddings.stop)
        embeddings.start()
        llm = stack.enter_context(FakeLLM())
        server = start_hindsight(base / "hindsight", postgres.new_database(), embeddings.url, llm.url)
        stack.callback(server.stop)
        yield f'[backends.hindsight]\nurl = "{server.url}"\nbank = "bench"\ntimeout = 120\n', server.stop


STORES = {"pixeltable": pixeltable, "hindsight": hindsight}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", choices=sorted(STORES))
    parser.add_argument("--corpus", default="ai-agents-1026")
    parser.add_argument("--embedder", default="minilm", help="the store's embedder (memrouter's name)")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--limit", type=int, default=0, help="only the corpus's first N memories (0: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, STORES[args.store](Path(folder), args.embedder) as (toml, down):
        base = Path(folder)
        project = base / "project"
        root = project / ".serena" / "memories"
        shutil.copytree(CORPORA / args.corpus, root)
        if args.limit:
            for extra in sorted(root.rglob("*.md"))[args.limit :]:
                extra.unlink()
        (project / "memrouter.toml").write_text(toml, encoding="utf-8")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
        with Router.open(root=root, index_dir=base / "index", watch=False) as router:
            router.refresh()
            count = len(router.list())
            router.search("warm up the embedder", limit=LIMIT, mode="hybrid", origin="canonical")
            started = time.perf_counter()
            report = router.sync()[0]
            seconds = time.perf_counter() - started
            assert report.ok, (report.error, list(report.failed.items())[:3])
            print(f"{args.store} sync of {args.corpus}{f' (first {args.limit})' if args.limit else ''} ({count} memories, embedder {args.embedder}): {seconds:.1f} s "
                  f"({len(report.created)} created)")  # fmt: skip
            started = time.perf_counter()
            again = router.sync()[0]
            print(f"  no-op re-sync: {(time.perf_counter() - started) * 1000:.0f} ms, {len(again.created)} created, "
                  f"{len(again.updated)} updated, {again.remote_calls} remote calls")  # fmt: skip
            backend = router.backend(args.store)
            queries = rare_words(sorted(root.rglob("*.md")), args.queries)
            backend.search(queries[0], LIMIT)
            load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
            print(f"{len(queries)} rare-word queries x 2, limit {LIMIT}; load average {load}"
                  " (compare the rows of one run when it is high)")  # fmt: skip
            show_latency(
                "augmenter alone (the backend's search)", timed_queries(lambda q: backend.search(q, LIMIT), queries)
            )

            def pair(mode: str, label: str) -> None:
                canonical = timed_queries(
                    lambda q: router.search(q, limit=LIMIT, mode=mode, origin="canonical"), queries
                )
                merged = timed_queries(lambda q: router.search(q, limit=LIMIT, mode=mode), queries)
                base_p50 = show_latency(f"{mode}, canonical only (baseline)", canonical)
                extra = show_latency(f"{mode}, default (augmenter {label})", merged) - base_p50
                print(f"  {mode}, augmenter {label}: {extra:+.2f} ms p50 over the baseline")

            pair("hybrid", "up")
            pair("lexical", "up")
            down()
            router.search(queries[0], limit=LIMIT, mode="lexical")  # the failure is noted and cached
            pair("hybrid", "down")
            pair("lexical", "down")


if __name__ == "__main__":
    main()
