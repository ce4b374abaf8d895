"""ConfiguredBackends: memrouter.toml sections become backends, flags and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrouter.core.errors import BackendNotInstalled, ConfigError
from memrouter.external.backends.configured import ConfiguredBackends, backend_settings

# Port 1 on loopback: a valid address that nothing answers, and building a backend never connects.
DOWN = "http://127.0.0.1:1/mcp"


def test_section_keys_are_split_into_type_options_and_flags() -> None:
    kind, options, flags = backend_settings("team", {"type": "forgetful", "url": DOWN, "sync": False, "timeout": 3})
    assert kind == "forgetful"
    assert options == {"url": DOWN, "timeout": 3, "name": "team"}
    assert flags == {"enabled": True, "search": True, "sync": False}
    assert backend_settings("forgetful", {"url": DOWN}) == ("forgetful", {"url": DOWN}, dict.fromkeys(flags, True))


def test_enabled_backends_are_built_once_and_flags_pick_them() -> None:
    configured = ConfiguredBackends({
        "forgetful": {"url": DOWN},
        "archive": {"type": "forgetful", "url": DOWN, "search": False},
        "off": {"type": "forgetful", "url": DOWN, "enabled": False},
    })  # fmt: skip
    built = configured.built()
    assert sorted(built) == ["archive", "forgetful"] and configured.built() is built
    assert list(configured.flagged("search")) == ["forgetful"]
    assert sorted(configured.flagged("sync")) == ["archive", "forgetful"]
    assert [backend.name for backend in configured.for_sync("archive")] == ["archive"]
    configured.close()
    assert configured.built() is not built  # built again after close


def test_a_backend_that_cannot_be_built_is_left_out_with_its_reason() -> None:
    configured = ConfiguredBackends({"nowhere": {"type": "no-such-kind"}, "both": {"type": "forgetful"}})
    assert configured.built() == {}
    assert "unknown backend 'no-such-kind'" in configured.errors["nowhere"]
    with pytest.raises(ConfigError, match="exactly one of 'url' and 'command'"):
        configured.get("both")
    with pytest.raises(ConfigError, match=r"no backend 'elsewhere' \(configured: both, nowhere\)"):
        configured.get("elsewhere")
    with pytest.raises(ConfigError, match="no external backend configured"):
        configured.for_sync(None)
    statuses = configured.status(lambda name: 0)
    assert [(entry["name"], entry["available"], entry["synced"]) for entry in statuses] == [
        ("both", False, 0), ("nowhere", False, 0),
    ]  # fmt: skip


def test_status_reports_each_section_with_its_sync_count() -> None:
    configured = ConfiguredBackends(
        {"forgetful": {"url": DOWN}, "off": {"type": "forgetful", "url": DOWN, "enabled": False}}
    )
    statuses = {entry["name"]: entry for entry in configured.status(lambda name: 7)}
    assert statuses["forgetful"]["available"] is False and statuses["forgetful"]["synced"] == 7
    assert statuses["forgetful"]["endpoint"] == DOWN
    assert statuses["off"]["error"] == "disabled"
    assert ConfiguredBackends({}).status(lambda name: 0) == []


def test_a_backend_whose_plugin_is_missing_is_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "memrouter_plugin_ghost-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: memrouter-plugin-ghost\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[memrouter.backends]\nghost = memrouter_ghost_module_absent:Ghost\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    configured = ConfiguredBackends({"team": {"type": "ghost"}, "odd": {"type": "no-such-kind"}})
    assert configured.built() == {}
    with pytest.raises(BackendNotInstalled) as caught:
        configured.get("team")
    assert str(caught.value).count("is not installed") == 1  # the registry's error, not a copy wrapping it
    assert "memrouter_ghost_module_absent" in caught.value.hint
    with pytest.raises(ConfigError, match="unknown backend 'no-such-kind'"):
        configured.get("odd")
