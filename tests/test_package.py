"""The public API, the import layering and the documentation stay honest."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from docpages import README, pages

import memrouter

SRC = Path(memrouter.__file__).parent


def test_public_api() -> None:
    assert sorted(memrouter.__all__) == sorted(
        [
            "BackendContractError", "BackendError", "BackendNotInstalled", "BackendUnavailable", "Config",
            "ConfigError", "Conflict", "Filters", "Hit", "IndexCorrupt", "InvalidInput", "Match", "Memory",
            "MemoryRouterError", "NotFound", "Router", "__version__",
        ]
    )  # fmt: skip
    for name in memrouter.__all__:
        assert hasattr(memrouter, name)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


# What each layer may import (docs/architecture.md "Layers"): its own modules and these.
BASE = ("memrouter.errors", "memrouter.model", "memrouter.query", "memrouter.lazylog", "memrouter.registry")
ALLOWED = {
    "store": (*BASE, "memrouter.store"),
    "embed": (*BASE, "memrouter.embed"),
    "index": (*BASE, "memrouter.index", "memrouter.store", "memrouter.embed"),
    # The PostgreSQL index beside it: the same rows, read from the local index (``pgindex/mirror.py``).
    "pgindex": (*BASE, "memrouter.pgindex", "memrouter.index", "memrouter.store", "memrouter.config"),
    # The Graphiti backend writes memrouter's graph (read from the memory text) and embeds with memrouter's embedder.
    "backends": (*BASE, "memrouter.backends", "memrouter.store", "memrouter.index.graph_extract", "memrouter.embed"),
    # With a database configured the mapping is shared in PostgreSQL (``sync/pgstate.py``), through its pool.
    "sync": (
        *BASE,
        "memrouter.sync",
        "memrouter.backends",
        "memrouter.index",
        "memrouter.store",
        "memrouter.config",
        "memrouter.pgindex.connect",
    ),
    "session": (*BASE, "memrouter.session"),
    # The team channel in PostgreSQL (``team/pgstore.py``) uses the index's pool and its schema of team tables.
    "team": (
        *BASE,
        "memrouter.team",
        "memrouter.config",
        "memrouter.index.connection",
        "memrouter.pgindex.connect",
        "memrouter.pgindex.schema_team",
    ),
    # The janitor composes like channels.py: the index, the files, the team channel (its idle workflows),
    # and the Router it is handed (typing only).
    "janitor": (*BASE, "memrouter.janitor", "memrouter.index", "memrouter.store", "memrouter.team", "memrouter.router"),
    "guard": (*BASE, "memrouter.guard"),
    # The claude-flow bridge: the team channel on one side, an MCP session (backends) on the other.
    "teambridge": (*BASE, "memrouter.teambridge", "memrouter.team", "memrouter.backends", "memrouter.config"),
}


def test_each_layer_imports_only_what_is_below_it() -> None:
    for layer, allowed in ALLOWED.items():
        for path in (SRC / layer).rglob("*.py"):
            for module in _imports(path):
                if module == "memrouter" or module.startswith("memrouter."):
                    assert module.startswith(allowed), f"{path.relative_to(SRC)} imports {module}"


def test_the_console_script_depends_one_way() -> None:
    assert not any(m.startswith("memrouter.cli") for m in _imports(SRC / "search_command.py"))
    assert not any(m.startswith("memrouter.console") for p in (SRC / "cli").glob("*.py") for m in _imports(p))


def test_no_module_is_over_500_lines() -> None:
    long = [
        f"{path.relative_to(SRC)}: {count}"
        for path in SRC.rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 500
    ]
    assert long == []


def test_every_error_descends_from_the_root() -> None:
    from memrouter import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, errors.MemoryRouterError)


def test_lexical_search_does_not_import_heavy_modules(tmp_path: Path) -> None:
    memories = tmp_path / "m"
    memories.mkdir()
    (memories / "a.md").write_text("# Alpha\n\nlexical only\n")
    code = (
        "import sys\n"
        "from memrouter.cli import main\n"
        f"sys.argv = ['memrouter', '--root', {str(memories)!r}, '--index-dir', {str(tmp_path / 'idx')!r},"
        " 'search', 'lexical', '--mode', 'lexical']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'mcp', 'onnxruntime', 'tokenizers', 'yaml', 'platformdirs') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in output, output


def test_every_cli_command_is_explained_in_the_docs() -> None:
    """Beyond its generated reference (tests/test_docs.py), every command is named in the README or a guide page."""
    from memrouter.cli import main

    guides = [page for page in pages() if page.name != "cli.md"]
    text = "\n".join(page.read_text(encoding="utf-8") for page in guides)
    for name in main.commands:
        assert re.search(rf"memrouter (\[[^\]]*\] )*{name}\b", text) or f"memrouter {name}" in text, name


def test_the_readme_opens_with_the_two_commands_and_fits_on_a_screen() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.lstrip().startswith("# memrouter")
    first = re.search(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert first is not None and [line.split()[:2] for line in first.group(1).splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    assert len(text.splitlines()) <= 300
