"""The int8 copy of MiniLM against fp32: full build time, tokens per second and how far the vectors move.

Builds the whole index (lexical and every chunk's vector) of a fresh copy of
ai-agents-1026 with ``minilm`` (fp32 on onnxruntime, the baseline) and with
``minilm-int8``, in one run and in turn, then compares the two vectors of
every chunk (the chunking is the same). Retrieval quality with each model
is ``benchmarks/fit_fusion.py --embedder minilm-int8`` beside the default.

    .venv/bin/python benchmarks/bench_int8.py [--corpus DIR]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import CORPUS

from memrouter import Config, Router
from memrouter.core.records import replace

MODELS = ("minilm", "minilm-int8")


def build(root: Path, index: Path, embedder: str) -> tuple[float, int, dict[tuple[str, int], np.ndarray]]:  # type: ignore[type-arg]
    """(seconds for the full build, tokens embedded, vectors by (memory, chunk ordinal))."""
    config = replace(Config.load(root=root, index_dir=index), embedder=embedder)
    with Router(config, watch=False) as router:
        router.workspace.index.dense.embedder  # noqa: B018  # the model loads before the clock starts
        started = time.perf_counter()
        router.refresh(embed=True)
        took = time.perf_counter() - started
        conn = router.workspace.index.conn
        counter = router.workspace.index.dense.embedder.count_tokens
        rows = conn.execute(
            "SELECT m.name, c.ordinal, c.vector, substr(m.body, c.start + 1, c.end - c.start) FROM chunks c "
            "JOIN memories m ON m.id = c.memory_id"
        ).fetchall()
    tokens = sum(counter(row[3]) for row in rows)
    return took, tokens, {(row[0], row[1]): np.frombuffer(row[2], dtype=np.float32) for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        shutil.copytree(args.corpus, root)
        results = {model: build(root, Path(tmp) / model, model) for model in MODELS}
    (base_s, base_tokens, base), (int8_s, _, int8) = results["minilm"], results["minilm-int8"]
    for model, (seconds, tokens, vectors) in results.items():
        print(f"{model:12s} full build {seconds:6.1f} s, {len(vectors)} chunks, {tokens / seconds:,.0f} tokens/s")
    print(f"int8 / fp32 build time: {int8_s / base_s:.2f} ({base_s / int8_s:.2f}x faster)")
    shared = sorted(set(base) & set(int8))
    cosines = np.array([float(np.dot(base[key], int8[key])) for key in shared])
    print(
        f"cosine int8 vs fp32 over {len(shared)} chunks: mean {cosines.mean():.4f}, p5 {np.percentile(cosines, 5):.4f}, "
        f"min {cosines.min():.4f} (fp32 tokens embedded: {base_tokens:,})"
    )


if __name__ == "__main__":
    main()
