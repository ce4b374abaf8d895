"""Embedding in the background: the first answer, the search latency meanwhile, the time to embed all.

On a fresh copy of ai-agents-1026 (or its first ``--memories`` files), with
the default embedder:

- the time from opening a router to the first lexical answer (the lexical
  build included; nothing is embedded yet);
- the background thread started (``Router.embed_in_background``): warm
  lexical and hybrid search p50/p95 while it embeds, against the same
  searches once it is done (the baseline, same run);
- the time until every memory has vectors, against embedding the same
  memories in the foreground (``memrouter index``'s way) in a fresh index of
  the same run.

    .venv/bin/python benchmarks/bench_background.py [--memories N]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import tempfile
import time
from pathlib import Path

from _common import CORPUS, QUERIES, percentiles

from memrouter import Router


def copy_corpus(target: Path, limit: int | None) -> int:
    files = sorted(CORPUS.rglob("*.md"))[:limit]
    for path in files:
        destination = target / path.relative_to(CORPUS)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return len(files)


def timed_searches(router: Router, mode: str, until: float | None, count: int) -> list[float]:
    """Search latencies (ms), ``count`` searches, or as many as fit before ``until`` (monotonic)."""
    took = []
    for query in itertools.islice(itertools.cycle(QUERIES), count):
        if until is not None and time.monotonic() > until:
            break
        started = time.perf_counter()
        router.search(query, mode=mode)
        took.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)  # an agent's pace, not a flood
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=None, help="the first N files only (default: all)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        count = copy_corpus(root, args.memories)
        print(f"{count} memories of {CORPUS.name}")

        started = time.perf_counter()
        with Router.open(root=root, index_dir=Path(tmp) / "fg", watch=False) as router:
            router.refresh()
            lexical_build = time.perf_counter() - started
            started = time.perf_counter()
            router.refresh(embed=True)
            foreground = time.perf_counter() - started
        print(f"foreground (memrouter index): lexical build {lexical_build:.2f} s, embedding {foreground:.1f} s")

        started = time.perf_counter()
        with Router.open(root=root, index_dir=Path(tmp) / "bg", watch=False) as router:
            router.search(QUERIES[0], mode="lexical")
            first = time.perf_counter() - started
            print(f"first lexical answer on a fresh index: {first:.2f} s after opening")
            router.embed_in_background()
            embedding_from = time.perf_counter()
            during: dict[str, list[float]] = {"lexical": [], "hybrid": []}
            while router.status()["dense"]["pending_memories"]:
                for mode in during:
                    during[mode] += timed_searches(router, mode, time.monotonic() + 1.0, 10)
            background = time.perf_counter() - embedding_from
            status = router.status()["dense"]["background"]
            print(
                f"background embedding: {background:.1f} s for every memory ({status['chunks_per_second']} chunks/s "
                f"while computing), {background / foreground:.2f}x the foreground time"
            )
            for mode, samples in during.items():
                after = timed_searches(router, mode, None, 60)
                p50, p95 = percentiles(samples)
                b50, b95 = percentiles(after)
                print(
                    f"  {mode:7s} search while embedding p50 {p50:6.2f} ms p95 {p95:6.2f} ms ({len(samples)} searches); "
                    f"after p50 {b50:6.2f} ms p95 {b95:6.2f} ms"
                )


if __name__ == "__main__":
    main()
