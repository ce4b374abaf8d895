"""Shared fixtures: every test gets its own memories folder, index folder and home.

``pytest --store postgres`` runs the chosen tests with every router reading a
fresh PostgreSQL database (``MEMROUTER_DATABASE_URL``, project ``project``) on
a real server started for the run, and fails a test whose router falls back
to the local index: the same behaviour tests over the other store
(``make test-postgres`` runs the index's behaviour tests so).
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import SAMPLE, isolated_home, write

if TYPE_CHECKING:
    from memrouter.testing.postgres_server import PostgresServer

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS_1026 = SHARED / "corpora" / "ai-agents-1026"
CORPUS_466 = SHARED / "corpora" / "ai-agents-466"
LOCOMO = SHARED / "bench" / "locomo10.json"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memories"


_databases = itertools.count()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store", choices=("sqlite", "postgres"), default="sqlite",
        help="the index every router reads (postgres: a fresh database per test on a real server)",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Compile memrouter's bytecode once, before any worker starts.

    Hundreds of tests start ``python -m memrouter`` or a server as a new
    process. Where ``PYTHONDONTWRITEBYTECODE`` is set, each of them would
    compile every memrouter module it imports from source again (``memrouter
    get`` costs twice the CPU time so). Compiling the whole package takes
    about half a second. Workers skip this; the controller (or a run without
    workers) does it, and Python's own timestamp check keeps an edited module
    from running stale.
    """
    if hasattr(config, "workerinput"):
        return
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("memrouter")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the tests marked ``long`` first; with ``--store postgres``, leave out the tests marked ``sqlite_only``
    (each says why).

    Parallel workers take tests in this order, so a test that runs for many
    seconds starts while the others still have short tests to take, rather
    than last, when a worker would run it alone.
    """
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: otherwise in collection order
    if config.getoption("store") != "postgres":
        return
    kept, left = [], []
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None and not marker.args:
            raise pytest.UsageError(f"{item.nodeid}: sqlite_only needs its reason")
        (left if marker is not None else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL with pgvector for the whole run; if it cannot start, the tests using it error."""
    from memrouter.testing.postgres_server import running_postgres

    with running_postgres() as server:
        yield server


@pytest.fixture
def database_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the run's server."""
    import psycopg

    name = f"t{next(_databases)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return postgres_server.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def _built_model_graph(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The built-in model's ONNX graph, built once per run into a folder of its own (None without the model).

    Building it from the weights costs more than a second of CPU; every test's
    home starts with hard links to these files, as a user's cache holds them
    after the first search. The pytest workers of one run share the folder: the
    first builds it, under a lock, and the others find it built. The build from
    an empty cache is still tested: ``tests/embed`` (its own ``onnx_cache``) and
    the release tests do it.
    """
    import fcntl

    from memrouter.core.errors import NotInstalled
    from memrouter.embed.loaders import resolve_model_path
    from memrouter.embed.onnx_bert import cached_onnx_model

    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent  # the folder of this run, above each worker's own
    folder = run / "model-graph"
    with open(run / "model-graph.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        folder.mkdir(exist_ok=True)
        try:
            cached_onnx_model(resolve_model_path(None) / "model.safetensors", folder)
        except NotInstalled:
            return None  # the tests that need the model fail with the reason themselves
    return folder


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    _built_model_graph: Path | None,
) -> None:
    """Keep caches and configuration out of the real home directory (and, with ``--store postgres``,
    point every router at a fresh database). The home's cache holds the built model graph."""
    isolated_home(tmp_path_factory.mktemp("home"), _built_model_graph, monkeypatch)
    for name in list(os.environ):
        if name.startswith("MEMROUTER_"):
            monkeypatch.delenv(name)
    if request.config.getoption("store") == "postgres":
        from memrouter.index.fallback import FallbackReader

        monkeypatch.setenv("MEMROUTER_DATABASE_URL", request.getfixturevalue("database_url"))
        monkeypatch.setenv("MEMROUTER_PROJECT", "project")
        monkeypatch.setattr(FallbackReader, "_fell_back", _refuse_fallback)  # every answer must come from PostgreSQL


def _refuse_fallback(search: object, exc: Exception) -> None:
    raise AssertionError(f"a router fell back to the local index: {exc}")


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    """A small memories folder with nested topics, front matter and plain files."""
    root = tmp_path / "project" / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(root, name, text)
    return root


@pytest.fixture
def router(memories: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    from memrouter import Router

    with Router.open(root=memories, index_dir=tmp_path / "index") as opened:
        yield opened


@pytest.fixture
def corpus_1026(tmp_path: Path) -> Path:
    if not CORPUS_1026.is_dir():
        pytest.skip("../shared/corpora/ai-agents-1026 is not available")
    return CORPUS_1026


@pytest.fixture
def corpus_copy(tmp_path: Path, corpus_1026: Path) -> Path:
    """A writable copy of the 1026 corpus."""
    target = tmp_path / "corpus"
    shutil.copytree(corpus_1026, target)
    return target
