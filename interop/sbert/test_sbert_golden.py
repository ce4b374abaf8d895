"""The sentence-transformers runtime (``memrouter[torch]``) matches the stored reference vectors.

The reference itself (``tests/data/embed_golden.json``) was made with
sentence-transformers and torch alone (``tests/data/make_golden.py``); the
onnxruntime and numpy runtimes are checked against it in ``make test``. This
runtime needs torch, which the development environment never holds, so it is
checked here, inside ``interop/.work/sbert-venv`` (sentence-transformers on
CPU-only torch, this memrouter editable), started by ``interop/run.sh``.
Without that environment the test fails: nothing here skips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from memrouter.embed import get_embedder

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "data" / "embed_golden.json"
THRESHOLD = 0.9999


def test_sentence_transformers_matches_golden() -> None:
    golden: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    entries = golden["entries"]
    assert any(entry["word_pieces"] > golden["window_pieces"] for entry in entries), "no windowed text"
    texts = [entry["text"] for entry in entries]
    reference = np.array([entry["vector"] for entry in entries], dtype=np.float32)
    embedder = get_embedder("sentence-transformers")
    assert embedder.runtime == "sentence-transformers"
    vectors = embedder.embed_batch(texts)
    assert vectors.shape == reference.shape
    assert vectors.dtype == np.float32
    cosines = np.sum(vectors * reference, axis=1) / np.linalg.norm(reference, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= THRESHOLD, f"{texts[worst][:60]!r}: cosine {cosines[worst]:.6f}"
