"""Shared fixtures: every test gets its own memories folder, index folder and home."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import SAMPLE, write

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS_1026 = SHARED / "corpora" / "ai-agents-1026"
CORPUS_466 = SHARED / "corpora" / "ai-agents-466"
LOCOMO = SHARED / "bench" / "locomo10.json"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memories"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep caches and configuration out of the real home directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in list(os.environ):
        if name.startswith("MEMROUTER_"):
            monkeypatch.delenv(name)


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    """A small memories folder with nested topics, front matter and plain files."""
    root = tmp_path / "project" / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(root, name, text)
    return root


@pytest.fixture
def router(memories: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    from memrouter import Router

    with Router.open(root=memories, index_dir=tmp_path / "index") as opened:
        yield opened


@pytest.fixture
def corpus_1026(tmp_path: Path) -> Path:
    if not CORPUS_1026.is_dir():
        pytest.skip("../shared/corpora/ai-agents-1026 is not available")
    return CORPUS_1026


@pytest.fixture
def corpus_copy(tmp_path: Path, corpus_1026: Path) -> Path:
    """A writable copy of the 1026 corpus."""
    target = tmp_path / "corpus"
    shutil.copytree(corpus_1026, target)
    return target
