"""The registry: built-ins and plugins through the same entry-point path, lazily."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memrouter.core.errors import BackendNotInstalled, ConfigError
from memrouter.external.backends import registry
from memrouter.external.backends.forgetful import ForgetfulBackend


def _install_plugin(root: Path, name: str, value: str, module_source: str | None = None) -> None:
    """A real installed distribution (dist-info with entry points) under ``root``."""
    dist = root / f"memrouter_plugin_{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: memrouter-plugin-{name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[memrouter.backends]\n{name} = {value}\n")
    if module_source is not None:
        module = value.split(":")[0]
        (root / f"{module}.py").write_text(module_source)


def test_builtin_forgetful_is_listed_and_loads() -> None:
    assert "forgetful" in registry.backend_names()
    assert registry.load_backend("forgetful") is ForgetfulBackend


def test_get_backend_builds_without_connecting() -> None:
    backend = registry.get_backend("forgetful", {"url": "http://127.0.0.1:9/mcp", "timeout": 2})
    assert isinstance(backend, ForgetfulBackend)
    assert backend.endpoint == "http://127.0.0.1:9/mcp"
    assert backend.connects == 0
    backend.close()


def test_unknown_name() -> None:
    with pytest.raises(ConfigError, match="unknown backend 'nope'.*forgetful"):
        registry.load_backend("nope")


def test_bad_config_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        registry.get_backend("forgetful", {})
    with pytest.raises(ConfigError):
        registry.get_backend("forgetful", {"url": "http://x/mcp", "command": "forgetful"})
    with pytest.raises(ConfigError, match="unknown setting"):
        registry.get_backend("forgetful", {"url": "http://x/mcp", "colour": "blue"})
    with pytest.raises(ConfigError):
        registry.get_backend("forgetful", {"url": "http://x/mcp", "timeout": "soon"})


def test_plugin_is_found_and_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "class EchoBackend:\n    def __init__(self, config):\n        self.config = dict(config)\n"
    _install_plugin(tmp_path, "echo", "memrouter_echo_plugin:EchoBackend", source)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "echo" in registry.backend_names()
    assert "memrouter_echo_plugin" not in sys.modules  # listing does not import
    backend = registry.get_backend("echo", {"a": 1})
    assert backend.config == {"a": 1}  # type: ignore[attr-defined]


def test_plugin_with_missing_module_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, "ghost", "memrouter_ghost_module_absent:Ghost")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BackendNotInstalled) as info:
        registry.load_backend("ghost")
    assert info.value.backend == "ghost"
    assert "memrouter_ghost_module_absent" in info.value.hint


def test_plugin_cannot_take_a_builtin_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, "forgetful", "memrouter_evil_module:Evil")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.load_backend("forgetful") is ForgetfulBackend


def test_light_import() -> None:
    import subprocess

    code = "import sys, memrouter.external.backends; print('mcp' in sys.modules, 'httpx2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
