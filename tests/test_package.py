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


ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def layers() -> list[list[str]]:
    """The layers of ``docs/architecture.md`` (its ``layers`` block), bottom first: each a list of packages."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = re.search(r"^```text\n# layers[^\n]*\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/architecture.md has no layers block"
    rows = [line.split()[1:] for line in block.group(1).splitlines() if line.strip()]
    return [[f"memrouter.{name}" for name in row] for row in reversed(rows)]


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its own name)."""
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(path: Path, known: dict[str, Path] | None = None) -> set[str]:
    """Every module ``path`` imports, inside functions and type-only imports too; with ``known``,
    ``from package import name`` of a submodule counts as that submodule."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            submodules = {f"{node.module}.{a.name}" for a in node.names} & set(known or ())
            found.update(submodules)
            if len(submodules) < len(node.names):  # names defined in the module itself
                found.add(node.module)
    return found


def layer_of(module: str, order: list[list[str]]) -> tuple[int, str]:
    """(layer number, the package that places it) of a module: the longest package a layer names."""
    best: tuple[int, str] | None = None
    for number, row in enumerate(order):
        for package in row:
            if module == package or module.startswith(package + "."):
                if best is None or len(package) > len(best[1]):
                    best = (number, package)
    assert best is not None, f"{module} is in no layer of docs/architecture.md"
    return best


def import_graph() -> dict[str, set[str]]:
    """Module -> the memrouter modules it imports (the package itself, ``memrouter``, left out)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets = set()
        for imported in _imports(path, known):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported not in (module, "memrouter"):
                targets.add(imported)
        graph[module] = targets
    del graph["memrouter"]
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                other = stack.pop()
                on.discard(other)
                group.append(other)
                if other == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_every_module_is_in_a_layer() -> None:
    order = layers()
    for module in modules():
        if module != "memrouter":
            layer_of(module, order)


def test_no_import_points_up_a_layer() -> None:
    order = layers()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer_of(target, order)[0] > layer_of(module, order)[0]
    )
    assert upward == []


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert _cycles(graph) == []
    order = layers()
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        home = layer_of(module, order)[1]
        packages.setdefault(home, set()).update(layer_of(t, order)[1] for t in targets)
        packages[home].discard(home)
    assert _cycles(packages) == []


def lazy_modules() -> set[str]:
    """The modules ``docs/architecture.md`` allows to import memrouter modules inside functions (its ``lazy`` block)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = re.search(r"^```text\n# lazy[^\n]*\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/architecture.md has no lazy block"
    return {f"memrouter.{line.split()[0]}" for line in block.group(1).splitlines() if line[:1].strip()}


def test_only_the_listed_fast_paths_import_inside_functions() -> None:
    allowed = lazy_modules()
    found: set[str] = set()
    for module, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                target = node.module if isinstance(node, ast.ImportFrom) else None
                if isinstance(node, ast.Import):
                    target = node.names[0].name
                if target and target.startswith("memrouter"):
                    found.add(module)
    placed = {m for m in found if not any(m == a or m.startswith(a + ".") for a in allowed)}
    assert placed == set(), "import these at the top, or list the module and why in docs/architecture.md"
    assert {a for a in allowed if not any(m == a or m.startswith(a + ".") for m in found)} == set(), (
        "listed, no longer lazy"
    )


def test_no_module_is_over_500_lines() -> None:
    long = [
        f"{path.relative_to(SRC)}: {count}"
        for path in SRC.rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 500
    ]
    assert long == []


def test_every_error_descends_from_the_root() -> None:
    from memrouter.core import errors

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
