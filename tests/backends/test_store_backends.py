"""The Pixeltable and Hindsight backends without their services: settings, install hints, defaults, a service away.

Both run against the real Pixeltable and the real Hindsight server in ``make
interop`` (interop/pixeltable, interop/tests/test_hindsight.py); here is what
needs neither: the development venv never holds Pixeltable (it is not in the
lock), and no Hindsight server runs.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SAMPLE, write

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.errors import BackendNotInstalled, BackendUnavailable, ConfigError
from memrouter.external.backends import registry
from memrouter.external.backends.hindsight import HindsightBackend, HindsightConfig
from memrouter.external.backends.pixeltable import PixeltableConfig, table_for
from memrouter.external.services import project_defaults
from memrouter.testing.servers import free_port, hanging_listener


def test_both_are_built_in_backends() -> None:
    assert {"pixeltable", "hindsight"} <= set(registry.backend_names())


def test_pixeltable_without_its_extra_says_how_to_install_it() -> None:
    assert importlib.util.find_spec("pixeltable") is None, "the development venv must not hold Pixeltable"
    with pytest.raises(BackendNotInstalled) as info:
        registry.get_backend("pixeltable", {"home": "/tmp/nowhere"})
    assert info.value.backend == "pixeltable" and "memrouter[pixeltable]" in info.value.hint


def test_importing_the_backend_modules_imports_neither_service() -> None:
    code = (
        "import sys; import memrouter.external.backends.pixeltable, memrouter.external.backends.hindsight; "
        "print('pixeltable' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_pixeltable_settings() -> None:
    config = PixeltableConfig.from_mapping({})
    assert (config.table, config.embedder, config.home, config.timeout) == ("memrouter.memories", "minilm", None, 120.0)
    config = PixeltableConfig.from_mapping({"home": "~/pxt", "table": "team.notes_2", "embedder": "hash"})
    assert config.home == Path("~/pxt").expanduser() and config.table == "team.notes_2"
    for bad in ({"table": "notes"}, {"table": "memrouter.my-project"}, {"table": "a..b"}, {"timeout": 0},
                {"health_ttl": -1}, {"colour": "blue"}, {"timeout": "soon"}):  # fmt: skip
        with pytest.raises(ConfigError):
            PixeltableConfig.from_mapping(bad)


def test_a_project_gets_its_own_pixeltable_table_and_hindsight_bank(tmp_path: Path) -> None:
    project = tmp_path / "my-service.v2"
    write(project / ".serena" / "memories", "a", "# A\n")
    (project / "memrouter.toml").write_text(
        '[backends.pixeltable]\nhome = "data/pxt"\n[backends.hindsight]\nurl = "http://127.0.0.1:9"\n'
        '[backends.other]\ntype = "pixeltable"\ntable = "shared.notes"\nhome = "/srv/pxt"\n',
        encoding="utf-8",
    )
    sections = project_defaults(Config.load(cwd=project, env={}))
    assert sections["pixeltable"]["table"] == "memrouter.my_service_v2" == table_for("my-service.v2")
    assert sections["pixeltable"]["home"] == str(project / "data" / "pxt")
    assert sections["hindsight"]["bank"] == "my-service-v2"
    assert (sections["other"]["table"], sections["other"]["home"]) == ("shared.notes", "/srv/pxt")
    assert table_for("2024 notes") == "memrouter.m_2024_notes"
    PixeltableConfig.from_mapping(sections["pixeltable"])
    HindsightConfig.from_mapping(sections["hindsight"])


def test_hindsight_settings() -> None:
    config = HindsightConfig.from_mapping({})
    assert (config.url, config.bank, config.budget, config.timeout) == (
        "http://127.0.0.1:8888",
        "memrouter",
        "mid",
        60.0,
    )
    backend = HindsightBackend.from_config({"url": "http://127.0.0.1:18888/", "bank": "team_a", "budget": "low"})
    assert backend.endpoint == "http://127.0.0.1:18888/v1/default/banks/team_a"
    for bad in ({"budget": "huge"}, {"bank": "a/b"}, {"bank": ""}, {"url": "ftp://x"}, {"timeout": -1},
                {"colour": "blue"}):  # fmt: skip
        with pytest.raises(ConfigError):
            HindsightConfig.from_mapping(bad)


def test_hindsight_away_is_unavailable_and_remembered() -> None:
    backend = HindsightBackend(HindsightConfig(url=f"http://127.0.0.1:{free_port()}", timeout=2))
    assert backend.search("   ") == [] and backend.requests == 0  # nothing to look for: no request
    with pytest.raises(BackendUnavailable):
        backend.search("cache ttl")
    assert backend.available() is False and "Connection" in (backend.health.last_error or "")


def test_hindsight_that_never_answers_times_out() -> None:
    with hanging_listener() as port:
        backend = HindsightBackend(HindsightConfig(url=f"http://127.0.0.1:{port}", timeout=0.5))
        with pytest.raises(BackendUnavailable, match="timed out"):
            backend.get("some-document")
        assert backend.health.report().ok is False


def test_a_router_with_hindsight_down_answers_from_the_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    for name, text in SAMPLE.items():
        write(project / ".serena" / "memories", name, text)
    (project / "memrouter.toml").write_text(
        f'[backends.hindsight]\nurl = "http://127.0.0.1:{free_port()}"\ntimeout = 2\n', encoding="utf-8"
    )
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        canonical = [hit.name for hit in router.search("flaky tests", limit=20, origin="canonical")]
        assert [hit.name for hit in router.search("flaky tests", limit=20)] == canonical
        (status,) = router.status()["backends"]
        assert status["name"] == "hindsight" and status["available"] is False and status["supports_inventory"]
        report = router.sync()[0]
        assert report.error is not None and not report.created
        with pytest.raises(BackendUnavailable):
            router.search("flaky tests", origin="hindsight")
