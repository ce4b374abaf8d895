"""What a release is made of: one version, and a wheel that runs on its own.

The wheel test builds the sdist and, from it, the wheel (``python -m build``
without isolation: setuptools is a development tool) from a copy of the
checkout as a fresh clone holds it, then installs the wheel
with ``--no-deps`` into a new venv whose one ``.pth`` line names the
development venv's site-packages: the dependencies are importable there, the
checkout is not, because a plain folder line in a ``.pth`` file joins
``sys.path`` without the ``.pth`` files inside it (the editable install's) being
read. ``make dist-check`` (``tests/dist``) is the thorough variant: the wheel of
``make dist`` with its dependencies from PyPI.
"""

from __future__ import annotations

import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from release import ROOT, build_dists, check_installed, check_sdist, check_wheel, new_venv, run, site_packages

import memrouter
from memrouter.cli import main


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "memrouter.__version__"}
    result = CliRunner().invoke(main, ["--version"], prog_name="memrouter")
    assert result.output == f"memrouter, version {memrouter.__version__}\n"


@pytest.mark.slow
def test_the_wheel_runs_without_the_checkout(tmp_path: Path) -> None:
    sdist, wheel = build_dists(tmp_path)
    check_sdist(sdist)
    check_wheel(wheel)

    venv = new_venv(tmp_path / "venv", with_pip=False)
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]
    run([*pip, "install", "--quiet", "--no-deps", "--no-index", wheel])
    development = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site_packages(venv) / "development_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(development)))
    check_installed(venv, tmp_path)
