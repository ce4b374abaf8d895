"""The documentation site builds, and the generated references in docs/ match the code.

docs/cli.md and docs/mcp.md hold sections that cog writes from the click
command group and the MCP server's tool list (``scripts/docs_reference.py``);
``cog --check`` fails here when the code changed and they were not written
again. ``mkdocs build --strict`` fails on a broken link or anchor and on a
page left out of the nav (``mkdocs.yml``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import docs_reference
import pytest
from cogapp import Cog
from docpages import DOCS, REPO
from markdown.extensions.toc import slugify

REFRESH = "make docs-refresh"
GENERATED = ("docs/cli.md", "docs/mcp.md")
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("page", GENERATED)
def test_generated_sections_are_current(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        status = Cog().main(["cog", "--check", "--diff", f"--check-fail-msg=run `{REFRESH}`", "-I", "scripts", page])
    assert status == 0, f"{page} is stale: run `{REFRESH}` and commit the result.\n{output.getvalue()}"


def test_every_command_has_help_and_is_in_the_reference() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### (memrouter.*)$", text, re.M))
    found = list(docs_reference.commands())
    assert isinstance(docs_reference.CLI, click.Group) and len(found) > 50
    for path, command in found:
        title = " ".join(("memrouter", *path))
        assert (command.help or "").strip(), f"{title} has no help text"
        assert title in headings, f"{title} is not in docs/cli.md: run `{REFRESH}`"


def test_every_mcp_tool_is_in_the_reference() -> None:
    text = (DOCS / "mcp.md").read_text(encoding="utf-8")
    for tool in docs_reference.listed_tools():
        assert tool.description, f"the MCP tool {tool.name} has no description"
        assert f"#### `{tool.name}`" in text, f"{tool.name} is not in docs/mcp.md: run `{REFRESH}`"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` (never ``--quiet``: it hides the warnings that strict mode counts)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the theme's notice about its successor
    command = [str(BIN / "mkdocs"), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)]
    return subprocess.run(command, capture_output=True, text=True, env=env)


def test_the_site_builds_strict(tmp_path: Path) -> None:
    done = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, f"`make docs` fails:\n{done.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()


def test_a_page_left_out_of_the_nav_or_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "stray.md").write_text("# Stray\n\nSee [nothing](missing.md).\n", encoding="utf-8")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "stray.md" in done.stderr and "missing.md" in done.stderr


def test_the_readmes_links_into_docs_resolve() -> None:
    """The README is not part of the site, so its links are checked here: each file exists, each anchor is a heading."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", text)
    assert links
    for target, anchor in links:
        assert (REPO / target).is_file(), f"the README links to {target}, which does not exist"
        if anchor:
            page = (REPO / target).read_text(encoding="utf-8")
            headings = {slugify(title, "-") for title in re.findall(r"^#+ (.+)$", page, re.M)}
            assert anchor in headings, f"the README links to {target}#{anchor}, which is no heading there"


def test_the_module_paths_the_docs_name_exist() -> None:
    """A dotted ``memrouter.`` name in the docs is a module, or an attribute of one, that exists today."""
    import importlib

    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for dotted in sorted(set(re.findall(r"\bmemrouter(?:\.[a-z_][a-z0-9_]*)+", page.read_text(encoding="utf-8")))):
            if dotted in ("memrouter.toml", "memrouter.backends", "memrouter.embedders", "memrouter.project"):
                continue  # the configuration file, the plugins' entry-point groups, a PostgreSQL setting
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    found: object = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for name in parts[cut:]:
                    found = getattr(found, name, None)
                if found is None:
                    missing.append(f"{page.name}: {dotted}")
                break
    assert missing == []
