"""``memrouter serve --projects FILE`` over one PostgreSQL database: the same checks as over local indexes,
and each project's rows under its own key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from docpages import blocks
from multiproject import ProjectsServer, check_tokens_and_projects, client, make_repository, projects_file, status_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_tokens_reach_only_their_projects_in_one_database(tmp_path: Path, database_url: str) -> None:
    alpha = make_repository(tmp_path, "alpha", "alphaword")
    beta = make_repository(tmp_path, "beta", "betaword")
    server = ProjectsServer(projects_file(tmp_path, {"alpha": alpha, "beta": beta}, database=database_url))
    try:
        await check_tokens_and_projects(server, alpha, beta)
    finally:
        stderr = server.stop()
    assert "PostgreSQL index unavailable" not in stderr  # answered by the database throughout
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT project, name FROM memories").fetchall()
    by_project = {key: {name for project, name in rows if project == key} for key in ("alpha", "beta")}
    assert {project for project, _ in rows} == {"alpha", "beta"}
    assert "ops/release-train" in by_project["alpha"] and "ops/release-train" not in by_project["beta"]
    assert by_project["beta"] == by_project["alpha"] - {"ops/release-train"}


def docs_projects_file() -> str:
    """The docs' example projects file (docs/teams.md)."""
    return next(block.text for block in blocks("toml") if block.text.startswith("# projects.toml"))


async def test_the_docs_teams_walkthrough(tmp_path: Path, database_url: str) -> None:
    """Index two repositories into one database, then serve them with the docs' projects file and tokens."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    for name in ("payments-service", "checkout-web"):
        folder = make_repository(tmp_path, name, name.replace("-", ""))
        # the docs' memrouter.toml: the repository's key, the one the projects file serves it under
        (folder / "memrouter.toml").write_text(f'[index]\nproject = "{name}"\n', encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "memrouter", "index", "--database", database_url], cwd=folder,
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
    with psycopg.connect(database_url) as conn:
        assert {row[0] for row in conn.execute("SELECT project FROM projects")} == {"payments-service", "checkout-web"}
    example = re.sub(r'^database = "[^"]*"', f'database = "{database_url}"', docs_projects_file(), flags=re.M)
    (tmp_path / "projects.toml").write_text(example, encoding="utf-8")
    tokens = {"MEMROUTER_TOKEN_PAYMENTS": "payments-secret", "MEMROUTER_TOKEN_PLATFORM": "platform-secret",
              "MEMROUTER_TOKEN_REVIEW": "review-secret"}  # fmt: skip
    server = ProjectsServer(tmp_path / "projects.toml", env=tokens)
    try:
        assert status_of(server.url("checkout-web"), "payments-secret") == 403
        assert status_of(server.url("checkout-web"), "platform-secret") == 200
        async with client(server.url("payments-service"), "payments-secret") as payments:
            found = await payments.call_tool("search_memory", {"query": "paymentsservice flaky", "mode": "lexical"})
            assert found.structured_content["results"]
            other = await payments.call_tool("search_memory", {"query": "checkoutweb", "mode": "lexical"})
            assert other.structured_content["results"] == []
    finally:
        stderr = server.stop()
    assert "PostgreSQL index unavailable" not in stderr
