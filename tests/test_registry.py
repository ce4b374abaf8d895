"""The one registry behind backends and embedders: same lookup, same plugins, same errors."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memrouter.core.errors import BackendError, BackendNotInstalled, ConfigError, NotInstalled
from memrouter.core.registry import Builtin, Registry
from memrouter.embed import EMBEDDERS, available_embedders
from memrouter.external.backends.registry import BACKENDS, backend_names, load_backend

# (entry-point group, names(), load(name), a built-in name)
KINDS: dict[str, tuple[str, Callable[[], list[str]], Callable[[str], Any], str]] = {
    "backend": ("memrouter.backends", backend_names, load_backend, "forgetful"),
    "embedder": ("memrouter.embedders", available_embedders, EMBEDDERS.load, "hash"),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _install_plugin(root: Path, group: str, name: str, value: str, module_source: str | None = None) -> None:
    """A real installed distribution (dist-info with one entry point) under ``root``."""
    dist = root / f"memrouter_plugin_{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: memrouter-plugin-{name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n{name} = {value}\n")
    if module_source is not None:
        (root / f"{value.split(':')[0]}.py").write_text(module_source)


def test_unknown_name_is_a_config_error_for_both(kind: str) -> None:
    _, _, load, builtin = KINDS[kind]
    with pytest.raises(ConfigError, match=f"unknown {kind} 'no-such-thing'.*{builtin}"):
        load("no-such-thing")


def test_plugin_is_listed_without_importing_and_loads(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group, names, load, _ = KINDS[kind]
    module = f"memrouter_{kind}_plugin_ok"
    _install_plugin(tmp_path, group, "zz-plugin", f"{module}:Factory", "class Factory:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    listed = names()
    assert "zz-plugin" in listed and listed.index("zz-plugin") > listed.index(KINDS[kind][3])
    assert module not in sys.modules
    assert load("zz-plugin").__name__ == "Factory"


def test_plugin_that_cannot_be_imported_is_not_installed(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group, _, load, _ = KINDS[kind]
    _install_plugin(tmp_path, group, "ghost", "memrouter_ghost_module_absent:Ghost")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotInstalled) as caught:
        load("ghost")
    assert caught.value.component == "ghost"
    assert "memrouter_ghost_module_absent" in caught.value.hint
    # Only a backend's missing piece is a backend error (exit 3); an embedder's is exit 1.
    assert isinstance(caught.value, BackendNotInstalled) == (kind == "backend")
    assert isinstance(caught.value, BackendError) == (kind == "backend")


def test_plugin_naming_a_missing_attribute_is_not_installed(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group, _, load, _ = KINDS[kind]
    module = f"memrouter_{kind}_plugin_attr"
    _install_plugin(tmp_path, group, "hollow", f"{module}:Missing", "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotInstalled, match="does not exist"):
        load("hollow")


def test_plugin_cannot_take_a_builtin_name(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    group, names, load, builtin = KINDS[kind]
    registry = BACKENDS if kind == "backend" else EMBEDDERS
    _install_plugin(tmp_path, group, builtin, "memrouter_evil_module:Evil")
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="memrouter.core.registry"):
        assert names().count(builtin) == 1
        loaded = load(builtin)
    assert f"{loaded.__module__}:{loaded.__name__}" == registry.builtins[builtin].target
    assert "memrouter_evil_module" not in sys.modules
    assert any("is a built-in" in record.getMessage() for record in caplog.records)


def test_builtin_import_failure_carries_its_hint() -> None:
    registry = Registry(
        "widget", "memrouter.test-widgets", {"w": Builtin("memrouter_no_such_module:W", "pip install widgets")}
    )
    assert registry.names() == ["w"]
    with pytest.raises(NotInstalled) as caught:
        registry.load("w")
    assert caught.value.hint.startswith("pip install widgets; import failed:")
    assert not isinstance(caught.value, BackendError)
