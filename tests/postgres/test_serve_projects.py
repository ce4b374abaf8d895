"""``memrouter serve --projects FILE`` over one PostgreSQL database: the same checks as over local indexes,
and each project's rows under its own key."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from multiproject import ProjectsServer, check_tokens_and_projects, make_repository, projects_file

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
