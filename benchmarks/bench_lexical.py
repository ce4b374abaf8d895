"""Lexical search speed on the 1026-memory corpus, against the upstream router's rule.

Prints, in one run:
- full index build of the corpus and a refresh with nothing changed;
- warm lexical search p50/p95 (``Router.search``: freshness check, BM25F over
  full content, snippets) next to the upstream rule run in the same process on
  the same corpus (list the memory files, rank each by the fraction of query
  words longer than 2 characters found as substrings of its relative path),
  and their ratio;
- cold ``memrouter search --mode lexical`` as a whole process (median wall),
  next to a bare ``python -c pass`` start interleaved with it.

Usage: python benchmarks/bench_lexical.py [CORPUS_DIR] [--rounds N] [--cold-runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts


def upstream_rule(root: Path, query: str, limit: int = 10) -> list[str]:
    """The upstream router's search: query words (> 2 chars) found in the file's path."""
    words = [w for w in query.lower().split() if len(w) > 2]
    scored = []
    base = len(str(root)) + 1
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for file in files:
            if not file.endswith(".md") or not words:
                continue
            relative = os.path.join(folder, file)[base:].lower()
            score = sum(1 for w in words if w in relative) / len(words)
            if score > 0:
                scored.append((score, relative))
    scored.sort(reverse=True)
    return [name for _, name in scored[:limit]]


def timed(func, rounds: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(rounds):
        for query in QUERIES:
            started = time.perf_counter()
            func(query)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", nargs="?", type=Path, default=CORPUS)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--cold-runs", type=int, default=20, help="cold CLI processes to time")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"corpus {args.corpus} not found; skipping")
        return
    from memrouter import Router

    work = Path(tempfile.mkdtemp(prefix="bench-lexical-"))
    try:
        builds = []
        for attempt in range(3):
            index_dir = work / f"idx{attempt}"
            with Router.open(root=args.corpus, index_dir=index_dir, watch=False) as router:
                started = time.perf_counter()
                report = router.refresh()
                builds.append(time.perf_counter() - started)
        total = len(report.added)
        with Router.open(root=args.corpus, index_dir=work / "idx0") as router:
            router.refresh()
            noop = []
            for _ in range(10):
                started = time.perf_counter()
                router.refresh()
                noop.append((time.perf_counter() - started) * 1000)
            router.search("warm up", mode="lexical")
            for query in QUERIES:  # warm the per-term caches, as a running server would be
                router.search(query, mode="lexical")
            ours = timed(lambda q: router.search(q, mode="lexical"), args.rounds)
            baseline = timed(lambda q: upstream_rule(args.corpus, q), max(3, args.rounds // 5))

        env = {**os.environ, "MEMROUTER_INDEX_DIR": str(work / "idx0")}
        command = [str(Path(sys.executable).with_name("memrouter")), "--root", str(args.corpus),
                   "search", "git worktree cleanup", "--mode", "lexical"]  # fmt: skip
        if not Path(command[0]).exists():
            command = [sys.executable, "-m", "memrouter", *command[1:]]
        # An installed package has its bytecode compiled; an editable checkout may not (PYTHONDONTWRITEBYTECODE).
        import compileall

        import memrouter

        compileall.compile_dir(Path(memrouter.__file__).parent, quiet=1)
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)  # warm the page cache
        # Interleaved with a bare interpreter start, so both see the same machine load.
        bare_command = [sys.executable, "-c", "pass"]
        cold, bare = [], []
        for _ in range(args.cold_runs):
            for runs, argv in ((cold, command), (bare, bare_command)):
                started = time.perf_counter()
                subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
                runs.append((time.perf_counter() - started) * 1000)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ours_p50, ours_p95 = percentiles(ours)
    base_p50, base_p95 = percentiles(baseline)
    print(f"corpus: {args.corpus} ({total} memories), {len(QUERIES)} queries x {args.rounds} rounds")
    print(f"full index build:        median {statistics.median(builds):.2f} s (target <= 3 s)")
    print(f"refresh, nothing changed: median {statistics.median(noop):.1f} ms (target <= 50 ms)")
    print(f"warm lexical search:     p50 {ours_p50:.3f} ms  p95 {ours_p95:.3f} ms (target p50 <= 1 ms)")
    print(f"upstream path rule:      p50 {base_p50:.3f} ms  p95 {base_p95:.3f} ms (same process, same corpus)")
    print(f"ratio memrouter/upstream p50: {ours_p50 / base_p50:.3f} (target < 0.5)")
    cold_median, bare_median = statistics.median(cold), statistics.median(bare)
    print(f"cold CLI search process: median {cold_median:.0f} ms (target <= 150 ms), min {min(cold):.0f} ms")
    print(f"bare interpreter start:  median {bare_median:.0f} ms (python -c pass, interleaved)")
    print(f"cold CLI above the bare interpreter: {cold_median - bare_median:.0f} ms")


if __name__ == "__main__":
    main()
