"""Factories behind the ``minilm*`` registry names (imported lazily by the registry).

The bundled model is loaded once per process for each runtime and set of
options, and that one embedder is shared by every index that asks for it (a
server with several projects, the web UI, a program opening routers one after
another): loading it takes about 0.1 s of CPU and about 100 MB. Sharing is safe:
once made, an embedder holds no state that a call changes (the tokenizer's
settings are fixed at load, and an onnxruntime session runs calls from several
threads at once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from memrouter.core.errors import NotInstalled
from memrouter.embed import MODEL_HINT
from memrouter.embed.bert import BertEmbedderBase
from memrouter.embed.numpy_bert import NumpyEmbedder
from memrouter.embed.weights import model_dir

__all__ = ["load_minilm", "load_minilm_onnx", "load_minilm_numpy", "resolve_model_path"]

_shared: dict[Hashable, BertEmbedderBase] = {}
_shared_lock = threading.Lock()


def _once(runtime: str, path: Path, options: dict[str, Any], make: Callable[[], BertEmbedderBase]) -> BertEmbedderBase:
    """The process's embedder for this runtime, model folder and options, made by ``make`` the first time."""
    key = (runtime, str(path.resolve()), tuple(sorted(options.items())))
    try:
        hash(key)
    except TypeError:  # an option that cannot be a key (a list, say): this embedder is the caller's alone
        return make()
    with _shared_lock:  # one load even when two threads ask first at once
        found = _shared.get(key)
        if found is None:
            found = _shared[key] = make()
        return found


def resolve_model_path(model_path: Path | str | None) -> Path:
    """The bundled model folder, or ``model_path`` once checked to hold the model files."""
    if model_path is None:
        return model_dir()
    path = Path(model_path)
    for name in ("model.safetensors", "tokenizer.json"):
        if not (path / name).is_file():
            raise NotInstalled("minilm", f"{path / name} is missing; {MODEL_HINT}")
    return path


def load_minilm_onnx(*, model_path: Path | str | None = None, **options: Any) -> BertEmbedderBase:
    """all-MiniLM-L6-v2 on onnxruntime; NotInstalled if onnxruntime is missing."""
    path = resolve_model_path(model_path)
    try:
        from memrouter.embed.onnx_bert import OnnxEmbedder
    except ImportError as exc:
        raise NotInstalled("minilm-onnx", "pip install onnxruntime onnx") from exc
    try:
        return _once("onnxruntime", path, options, lambda: OnnxEmbedder(path, **options))
    except ImportError as exc:
        raise NotInstalled("minilm-onnx", f"a dependency is missing ({exc.name}); {MODEL_HINT}") from exc


def load_minilm_int8(*, model_path: Path | str | None = None, **options: Any) -> BertEmbedderBase:
    """all-MiniLM-L6-v2 quantised to int8 on onnxruntime (its own model id: its vectors differ a little)."""
    return load_minilm_onnx(model_path=model_path, quantized=True, **options)


def load_minilm_numpy(*, model_path: Path | str | None = None, **options: Any) -> BertEmbedderBase:
    """all-MiniLM-L6-v2 as a numpy forward pass (needs only numpy and tokenizers)."""
    path = resolve_model_path(model_path)

    try:
        return _once("numpy", path, options, lambda: NumpyEmbedder(path, **options))
    except ImportError as exc:
        raise NotInstalled("minilm-numpy", f"pip install numpy tokenizers ({exc.name} missing)") from exc


def load_minilm(*, model_path: Path | str | None = None, **options: Any) -> BertEmbedderBase:
    """The default: onnxruntime (about 3.5x faster) when installed, else numpy.

    Both give the same vectors, so the choice never invalidates an index. The
    embedder's ``runtime`` attribute says which one was picked.
    """
    path = resolve_model_path(model_path)
    numpy_only = {k: v for k, v in options.items() if k not in ("threads", "cache_dir")}
    try:
        import onnxruntime  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return load_minilm_numpy(model_path=path, **numpy_only)
    return load_minilm_onnx(model_path=path, **options)
