"""The endpoint embedder against the built-in model: overhead, and the same vectors.

On ai-agents-1026, in one run:

- builds the index twice, with the built-in all-MiniLM-L6-v2 and through
  ``[embed] url`` pointing at ``memrouter embed-serve`` on loopback (the same
  model behind the OpenAI-compatible API), and prints both build times and
  their ratio;
- times warm hybrid searches of the fixed query list on each index (p50 and
  p95; the endpoint's include the HTTP round trip of the query's embedding);
- compares every chunk's vector between the two indexes: the cosine must be at
  least 0.9999 (the same chunks, the same model, only the transport differs).

The load average is printed beside the figures, as the machine may be shared.

    .venv/bin/python benchmarks/bench_endpoint.py [--rounds 5] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import CORPUS, QUERIES, percentiles

from memrouter import Router
from memrouter.testing.endpoint_fake import embed_serve

THRESHOLD = 0.9999


def project(work: Path, name: str, toml: str) -> Path:
    """A project under ``work`` holding a copy of the corpus and ``toml``: its memories root."""
    root = work / name / ".serena" / "memories"
    shutil.copytree(CORPUS, root)
    (work / name / "memrouter.toml").write_text(toml, encoding="utf-8")
    return root


def build(root: Path) -> float:
    started = time.perf_counter()
    with Router.open(root=root, index_dir=root.parent.parent / ".memrouter") as router:
        router.refresh(embed=True)
    return time.perf_counter() - started


def search_times(root: Path, rounds: int) -> list[float]:
    with Router.open(root=root, index_dir=root.parent.parent / ".memrouter") as router:
        assert router.effective_mode() == "hybrid"
        for query in QUERIES:  # warm: caches, the model, the connection
            router.search(query, limit=10)
        samples = []
        for _ in range(rounds):
            for query in QUERIES:
                started = time.perf_counter()
                router.search(query, limit=10)
                samples.append((time.perf_counter() - started) * 1000)
    return samples


def vectors(root: Path) -> dict[tuple[str, int], np.ndarray]:
    with sqlite3.connect(root.parent.parent / ".memrouter" / "index.sqlite") as conn:
        rows = conn.execute("SELECT m.name, c.ordinal, c.vector FROM chunks c JOIN memories m ON m.id = c.memory_id")
        return {(name, ordinal): np.frombuffer(blob, dtype=np.float32) for name, ordinal, blob in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="times each query is searched, warm")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-endpoint-"))
    print(f"ai-agents-1026, {len(QUERIES)} queries x {args.rounds} rounds; load average before: {os.getloadavg()}")
    with embed_serve() as base:
        built_in = project(work, "built-in", "")
        through = project(work, "endpoint", f'[embed]\nurl = "{base}/v1"\nmodel = "all-MiniLM-L6-v2"\n')
        own_build = build(built_in)
        served_build = build(through)
        print(f"build (lexical + dense): built-in {own_build:.1f} s, through embed-serve {served_build:.1f} s "
              f"({served_build / own_build:.2f}x)")  # fmt: skip
        own = percentiles(search_times(built_in, args.rounds))
        served = percentiles(search_times(through, args.rounds))
        print(f"warm hybrid search p50 / p95: built-in {own[0]:.1f} / {own[1]:.1f} ms, through embed-serve "
              f"{served[0]:.1f} / {served[1]:.1f} ms (+{served[0] - own[0]:.1f} ms p50)")  # fmt: skip
    mine, theirs = vectors(built_in), vectors(through)
    same = mine.keys() == theirs.keys()
    cosines = np.array([float(mine[key] @ theirs[key]) for key in mine if key in theirs])
    verdict = "ok" if same and cosines.min() >= THRESHOLD else "FAILED"
    print(f"vectors: {len(mine)} chunks built-in, {len(theirs)} through the endpoint, same chunks: {same}; "
          f"cosine min {cosines.min():.6f}, mean {cosines.mean():.6f} (>= {THRESHOLD}: {verdict})")  # fmt: skip
    print(f"load average after: {os.getloadavg()}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
