"""Behaviour of the MiniLM runtimes: shapes, norms, windowing, batching, tokens."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from memrouter.embed import Embedder, embed, embed_many
from memrouter.embed.bert import BertEmbedderBase
from memrouter.embed.numpy_bert import erf, gelu_

pytestmark = pytest.mark.slow

TEXTS = [
    "The index is rebuilt from the markdown files.",
    "short",
    "",
    "Sync is one way: canonical files to the external service, by content hash. " * 8,
    "naïve café ☕ 日本語",
]


def test_is_an_embedder(minilm: BertEmbedderBase) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.model_id == "all-MiniLM-L6-v2"
    assert minilm.dimension == 384
    assert minilm.max_tokens == 256


def test_vectors_are_float32_unit_rows(minilm: BertEmbedderBase) -> None:
    vectors = minilm.embed_batch(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_batch(minilm: BertEmbedderBase) -> None:
    assert minilm.embed_batch([]).shape == (0, 384)


def test_a_string_is_not_a_batch(minilm: BertEmbedderBase) -> None:
    with pytest.raises(TypeError):
        minilm.embed_batch("one text")  # type: ignore[arg-type]


def test_batching_does_not_change_vectors(minilm: BertEmbedderBase) -> None:
    together = minilm.embed_batch(TEXTS)
    alone = np.stack([minilm.embed(text) for text in TEXTS])
    np.testing.assert_allclose(np.sum(together * alone, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(embed(minilm, TEXTS[0]), alone[0], atol=1e-6)


def test_related_texts_are_closer_than_unrelated(minilm: BertEmbedderBase) -> None:
    query, near, far = minilm.embed_batch(
        [
            "how is continuous integration configured?",
            "The CI pipeline runs make test on every push.",
            "Grandma's apple pie needs cinnamon.",
        ]
    )
    assert float(query @ near) > float(query @ far) + 0.2


def test_long_text_is_windowed_not_truncated(minilm_onnx: BertEmbedderBase) -> None:
    head = "The deployment uses blue green switching with health checks. " * 30
    tail = "Database migrations are reversible and tested in staging. " * 30
    assert minilm_onnx.count_tokens(head) > 256
    combined, head_only = minilm_onnx.embed_batch([head + tail, head])
    # Truncation would make both identical: the tail must move the vector.
    assert float(combined @ head_only) < 0.99
    tail_vector = minilm_onnx.embed(tail)
    assert float(combined @ tail_vector) > float(head_only @ tail_vector)


def test_windows_are_token_weighted(minilm_onnx: BertEmbedderBase) -> None:
    tokenizer = minilm_onnx._tokenizer
    text = "word " * 300  # 300 pieces: windows of 254 and 46
    pieces = tokenizer.encode(text, add_special_tokens=False).ids
    assert len(pieces) == 300
    windows = minilm_onnx._embed_windows([pieces[:254], pieces[254:]])
    expected = 254 * windows[0] + 46 * windows[1]
    expected /= np.linalg.norm(expected)
    np.testing.assert_allclose(minilm_onnx.embed(text), expected, atol=1e-5)


def test_count_tokens_includes_special_tokens(minilm: BertEmbedderBase) -> None:
    assert minilm.count_tokens("") == 2
    assert minilm.count_tokens("hello") == 3
    assert minilm.count_tokens("hello world") == 4


def test_embed_many_orders_and_reports_progress(minilm_onnx: BertEmbedderBase) -> None:
    calls: list[tuple[int, int]] = []
    vectors = embed_many(minilm_onnx, TEXTS, batch_size=2, progress=lambda done, total: calls.append((done, total)))
    direct = minilm_onnx.embed_batch(TEXTS)
    np.testing.assert_allclose(np.sum(vectors * direct, axis=1), 1.0, atol=1e-5)
    assert calls == [(2, 5), (4, 5), (5, 5)]


def test_runtimes_agree(minilm_onnx: BertEmbedderBase, minilm_numpy: BertEmbedderBase) -> None:
    a = minilm_onnx.embed_batch(TEXTS)
    b = minilm_numpy.embed_batch(TEXTS)
    assert np.min(np.sum(a * b, axis=1)) >= 0.99999


def test_erf_and_gelu_are_accurate() -> None:
    x = np.linspace(-7, 7, 5001, dtype=np.float32)
    expected = np.array([math.erf(float(v)) for v in x])
    assert np.max(np.abs(erf(x) - expected)) < 1e-6
    gelu_expected = np.array([0.5 * float(v) * (1 + math.erf(float(v) / math.sqrt(2))) for v in x])
    assert np.max(np.abs(gelu_(x.copy()) - gelu_expected)) < 1e-5


def test_onnx_graph_is_built_once_and_cached(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from memrouter.embed.onnx_bert import cached_onnx_model
    from memrouter.embed.weights import file_sha256, model_dir

    weights = model_dir() / "model.safetensors"
    first = cached_onnx_model(weights, tmp_path)
    assert file_sha256(weights)[:32] in first.name
    stamp = first.stat().st_mtime_ns
    second = cached_onnx_model(weights, tmp_path)
    assert second == first and second.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, "hashes.json"])


def test_the_int8_copy_keeps_the_vectors_close_under_its_own_model_id(
    minilm_onnx: BertEmbedderBase, onnx_cache: Path
) -> None:
    from memrouter.embed import get_embedder

    int8 = get_embedder("minilm-int8", cache_dir=onnx_cache)
    assert int8.model_id == "all-MiniLM-L6-v2-int8-v2" != minilm_onnx.model_id  # vectors never mix
    texts = [text for text in TEXTS if text] + [p.read_text(encoding="utf-8")[:1500] for p in _corpus_sample()]
    cosines = np.sum(int8.embed_batch(texts) * minilm_onnx.embed_batch(texts), axis=1)
    assert cosines.min() >= 0.98 and cosines.mean() >= 0.995
    assert sorted(p.name for p in onnx_cache.glob("*-int8v2.onnx"))  # made once, beside the fp32 graph
    assert get_embedder("minilm-int8", cache_dir=onnx_cache) is int8  # one per process
    from memrouter.embed.onnx_bert import OnnxEmbedder

    again = OnnxEmbedder(int8.model_path, cache_dir=onnx_cache, quantized=True)  # from the kept int8 graph
    np.testing.assert_allclose(again.embed_batch(texts[:3]), int8.embed_batch(texts[:3]), atol=1e-6)


def test_the_model_is_loaded_once_per_process_runtime_and_options(
    minilm_onnx: BertEmbedderBase, minilm_numpy: BertEmbedderBase, onnx_cache: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from memrouter.embed import get_embedder

    assert get_embedder("minilm-onnx", cache_dir=onnx_cache) is minilm_onnx
    assert get_embedder("minilm", cache_dir=onnx_cache) is minilm_onnx  # the default picks the same runtime
    assert get_embedder("minilm-numpy") is minilm_numpy is not minilm_onnx
    other = get_embedder("minilm-onnx", cache_dir=onnx_cache, batch_tokens=512)
    assert other is not minilm_onnx and other._batch_tokens == 512
    with ThreadPoolExecutor(4) as pool:  # threads asking first, at once, get one embedder
        made = list(pool.map(lambda _: get_embedder("minilm-onnx", cache_dir=onnx_cache, max_batch=8), range(4)))
    assert all(embedder is made[0] for embedder in made) and made[0] is not minilm_onnx
    texts = [text for text in TEXTS if text]
    with ThreadPoolExecutor(4) as pool:  # and one embedder serves threads at once with the same vectors
        vectors = list(pool.map(minilm_onnx.embed_batch, [texts] * 8))
    for each in vectors[1:]:
        np.testing.assert_allclose(each, vectors[0], atol=1e-6)


def _corpus_sample() -> list[Path]:
    """Real memories from the repository's examples."""
    return sorted((Path(__file__).resolve().parents[2] / "examples" / "memories").rglob("*.md"))[:12]
