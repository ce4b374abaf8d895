"""Embedder fixtures: each model runtime is loaded once per test session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memrouter.embed import get_embedder
from memrouter.embed.bert import BertEmbedderBase

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "embed_golden.json"


@pytest.fixture(scope="session")
def golden() -> dict[str, Any]:
    """The sentence-transformers reference vectors (tests/data/make_golden.py)."""
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private cache folder for the built ONNX graph (never the real home)."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def minilm_onnx(onnx_cache: Path) -> BertEmbedderBase:
    """The onnxruntime runtime (skipped where onnxruntime is not installed)."""
    pytest.importorskip("onnxruntime")
    embedder = get_embedder("minilm-onnx", cache_dir=onnx_cache)
    assert isinstance(embedder, BertEmbedderBase)
    return embedder


@pytest.fixture(scope="session")
def minilm_numpy() -> BertEmbedderBase:
    """The pure numpy runtime."""
    embedder = get_embedder("minilm-numpy")
    assert isinstance(embedder, BertEmbedderBase)
    return embedder


@pytest.fixture(scope="session", params=["onnx", "numpy"])
def minilm(request: pytest.FixtureRequest) -> BertEmbedderBase:
    """Each local runtime in turn."""
    name = "minilm_onnx" if request.param == "onnx" else "minilm_numpy"
    embedder: BertEmbedderBase = request.getfixturevalue(name)
    return embedder
