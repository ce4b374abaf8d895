"""Every runtime matches the sentence-transformers reference (cosine >= 0.9999).

The onnxruntime and numpy runtimes are checked here; the sentence-transformers
runtime itself needs torch, so ``make interop`` checks it in its own
environment (``interop/sbert``). The golden set holds short, unicode, code,
markdown and long texts; the long ones (over the 256-token window) check the
windowing, since their reference is the token-weighted mean of per-window
reference vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memrouter.embed.bert import BertEmbedderBase

pytestmark = pytest.mark.slow

THRESHOLD = 0.9999


def _check(embedder: Any, golden: dict[str, Any], max_pieces: int | None = None) -> None:
    entries = [e for e in golden["entries"] if max_pieces is None or e["word_pieces"] <= max_pieces]
    texts = [entry["text"] for entry in entries]
    reference = np.array([entry["vector"] for entry in entries], dtype=np.float32)
    vectors = embedder.embed_batch(texts)
    assert vectors.shape == reference.shape
    assert vectors.dtype == np.float32
    cosines = np.sum(vectors * reference, axis=1) / np.linalg.norm(reference, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= THRESHOLD, f"{texts[worst][:60]!r}: cosine {cosines[worst]:.6f}"


def test_golden_set_covers_windowing(golden: dict[str, Any], minilm_numpy: BertEmbedderBase) -> None:
    long_entries = [e for e in golden["entries"] if e["word_pieces"] > golden["window_pieces"]]
    assert len(long_entries) >= 3
    for entry in long_entries:
        assert minilm_numpy.count_tokens(entry["text"]) == entry["word_pieces"] + 2


def test_onnx_runtime_matches_golden(golden: dict[str, Any], minilm_onnx: BertEmbedderBase) -> None:
    _check(minilm_onnx, golden)


def test_numpy_runtime_matches_golden(golden: dict[str, Any], minilm_numpy: BertEmbedderBase) -> None:
    # The slowest runtime skips the two longest texts; one windowed text stays in.
    _check(minilm_numpy, golden, max_pieces=400)


def test_texts_one_at_a_time_match_golden(golden: dict[str, Any], minilm_onnx: BertEmbedderBase) -> None:
    entries = golden["entries"][:6]
    for entry in entries:
        vector = minilm_onnx.embed(entry["text"])
        reference = np.asarray(entry["vector"], dtype=np.float32)
        assert float(vector @ reference) / float(np.linalg.norm(reference)) >= THRESHOLD
