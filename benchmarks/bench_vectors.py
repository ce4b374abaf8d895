"""Exact vs HNSW vector search on synthetic clustered embeddings.

    .venv/bin/python benchmarks/bench_vectors.py [--rows 100000] [--queries 300]

Vectors are 384-d, unit length, drawn around 2,000 topic centres that share a
common direction (real sentence embeddings are clustered and anisotropic, not
uniform on the sphere). Queries are fresh draws from the same topics, so they
land near data as real queries do. Reports build time, p50/p95 latency of
single-query top-10 search for exact (one matrix product) and HNSW (usearch),
and HNSW recall@10 against exact. Targets: recall >= 0.98, HNSW p95 <= 10 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from memrouter.index.sqlite.vectors import ExactSearch, HnswSearch, recall_at_k  # noqa: E402


def clustered(rows: int, dim: int, topics: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around topic centres, plus the centres and topic of each row."""
    common = rng.normal(size=dim).astype(np.float32)
    common /= np.linalg.norm(common)
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    centres = 0.35 * common + centres
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic = rng.integers(0, topics, size=rows)
    spread = rng.uniform(0.035, 0.07, size=(rows, 1)).astype(np.float32)
    points = centres[topic] + spread * rng.normal(size=(rows, dim)).astype(np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32), centres


def percentiles(samples: list[float]) -> tuple[float, float]:
    values = np.array(samples) * 1000.0
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def time_queries(searcher: ExactSearch | HnswSearch, queries: np.ndarray, k: int) -> list[float]:
    for query in queries[:10]:
        searcher.top_k(query, k)
    samples = []
    for query in queries:
        start = time.perf_counter()
        searcher.top_k(query, k)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--topics", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--connectivity", type=int, default=16)
    parser.add_argument("--expansion-add", type=int, default=64)
    parser.add_argument("--expansion-search", type=int, default=128)
    parser.add_argument("--dtype", default="f32", choices=["f32", "f16", "i8"])
    args = parser.parse_args()

    rng = np.random.default_rng(7)
    vectors, _ = clustered(args.rows, args.dim, args.topics, rng)
    # Same seed, more rows: the same topic centres, and the extra rows are new
    # members of those topics, used as queries.
    queries_source, _ = clustered(args.rows + args.queries, args.dim, args.topics, np.random.default_rng(7))
    queries = queries_source[args.rows :]

    exact = ExactSearch(vectors)
    start = time.perf_counter()
    hnsw = HnswSearch.build(
        vectors,
        connectivity=args.connectivity,
        expansion_add=args.expansion_add,
        expansion_search=args.expansion_search,
        dtype=args.dtype,
    )
    build_s = time.perf_counter() - start

    exact_p50, exact_p95 = percentiles(time_queries(exact, queries, args.k))
    hnsw_p50, hnsw_p95 = percentiles(time_queries(hnsw, queries, args.k))
    recall = recall_at_k(hnsw, exact, k=args.k, queries=queries)
    data_recall = recall_at_k(hnsw, exact, k=args.k, samples=args.queries)

    print(f"rows={args.rows} dim={args.dim} topics={args.topics} queries={args.queries} k={args.k}")
    print(
        f"hnsw params: M={args.connectivity} ef_add={args.expansion_add} ef_search={args.expansion_search} "
        f"dtype={args.dtype}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus"
    )
    print(f"hnsw build: {build_s:.1f} s ({args.rows / build_s:,.0f} rows/s)")
    print(f"exact  p50 {exact_p50:7.3f} ms   p95 {exact_p95:7.3f} ms")
    print(f"hnsw   p50 {hnsw_p50:7.3f} ms   p95 {hnsw_p95:7.3f} ms   speed-up p50 x{exact_p50 / hnsw_p50:.1f}")
    print(f"hnsw recall@{args.k}: {recall:.4f} (fresh queries)  {data_recall:.4f} (perturbed rows)")
    ok = recall >= 0.98 and hnsw_p95 <= 10.0
    print(f"targets recall>=0.98 and hnsw p95<=10 ms: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
