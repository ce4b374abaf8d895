"""What a release is made of: one version."""

from __future__ import annotations

import tomllib
from pathlib import Path

from click.testing import CliRunner

import memrouter
from memrouter.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "memrouter.__version__"}
    result = CliRunner().invoke(main, ["--version"], prog_name="memrouter")
    assert result.output == f"memrouter, version {memrouter.__version__}\n"
