"""``memrouter serve --projects FILE``: one HTTP server, several repositories, tokens mapped to projects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers import initialize_status
from multiproject import (
    TOKEN_A,
    TOKEN_B,
    TOKEN_READER,
    ProjectsServer,
    check_tokens_and_projects,
    make_repository,
    projects_file,
    status_of,
)

from memrouter.config.projects import load_projects
from memrouter.core.errors import ConfigError

pytestmark = pytest.mark.anyio


async def test_tokens_reach_only_their_projects(tmp_path: Path) -> None:
    alpha = make_repository(tmp_path, "alpha", "alphaword")
    beta = make_repository(tmp_path, "beta", "betaword")
    server = ProjectsServer(projects_file(tmp_path, {"alpha": alpha, "beta": beta}))
    try:
        await check_tokens_and_projects(server, alpha, beta)
    finally:
        server.stop()
    assert (alpha / ".memrouter" / "index.sqlite").is_file()  # each project keeps its own local index
    assert (beta / ".memrouter" / "index.sqlite").is_file()


async def test_no_project_a_bad_header_and_a_project_that_cannot_open(tmp_path: Path) -> None:
    alpha = make_repository(tmp_path, "alpha", "alphaword")
    beta = make_repository(tmp_path, "beta", "betaword")
    server = ProjectsServer(projects_file(tmp_path, {"alpha": alpha, "beta": beta}))
    try:
        base = server.url("alpha").rsplit("/", 2)[0]
        assert status_of(base + "/mcp", TOKEN_B) == 404
        assert status_of(base + "/mcp/", TOKEN_B) == 404
        assert status_of(base + "/elsewhere", TOKEN_B) == 404
        assert initialize_status(server.url("alpha"), {"Authorization": TOKEN_A}) == 401
        assert initialize_status(server.url("alpha"), {"Authorization": f"Basic {TOKEN_A}"}) == 401
        assert status_of(server.url("alpha") + "/", TOKEN_A) == 200
        huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * (4 << 20) + b'"}}'
        request = urllib.request.Request(server.url("alpha"), data=huge, method="POST", headers={
            "Authorization": f"Bearer {TOKEN_READER}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 403 and b"too large to check" in refused.value.read()
        refused.value.close()
        (beta / "memrouter.toml").write_text("[search]\nmode = 'nonsense'\n", encoding="utf-8")  # broken after start
        assert status_of(server.url("beta"), TOKEN_B) == 503
        assert status_of(server.url("alpha"), TOKEN_B) == 200  # the other projects go on
    finally:
        stderr = server.stop()
    assert "cannot open project beta" in stderr


def test_a_bad_repository_configuration_stops_the_server_before_it_listens(tmp_path: Path) -> None:
    alpha = make_repository(tmp_path, "alpha", "alphaword")
    (alpha / "memrouter.toml").write_text("[search]\nmode = 'nonsense'\n", encoding="utf-8")
    file = projects_file(tmp_path, {"alpha": alpha})
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "serve", "--projects", str(file)], capture_output=True, text=True,
        timeout=60, env={**os.environ, "MEMROUTER_TEST_TOKEN_B": "b"},
    )  # fmt: skip
    assert done.returncode == 2 and "mode" in done.stderr, done.stderr


def write_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "repo" / ".serena" / "memories").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "projects.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = '[projects.repo]\npath = "repo"\n[tokens.t]\ntoken = "s3cret"\nprojects = ["repo"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "at least one [projects.<name>]"),
        (GOOD.replace("[tokens.t]", "[tokens.t]\nwrite = true"), "unknown key(s) in [tokens.t]: write"),
        (GOOD.replace("[tokens.t]", "[tokens.t]\nread_only = true"), "read_only must be a list of project keys"),
        (GOOD.replace("[tokens.t]", '[tokens.t]\nread_only = ["repo"]'), "repo in both projects and read_only"),
        (GOOD.replace('projects = ["repo"]', "projects = []"), "or read_only = [...]"),
        (GOOD + "extra = 1\n", "unknown key(s) in [tokens.t]: extra"),
        (GOOD.replace('projects = ["repo"]', 'projects = ["repo", "other"]'), "no such project(s): other"),
        (GOOD.replace('token = "s3cret"', 'token = " "'), "must not be empty"),
        (GOOD.replace('token = "s3cret"', 'token_env = "UNSET_VARIABLE"'), "UNSET_VARIABLE is not set"),
        (GOOD + '[tokens.u]\ntoken = "s3cret"\nprojects = ["repo"]\n', "the same token is given twice"),
        (GOOD.replace('path = "repo"', 'path = "missing"'), "is not a folder"),
        (GOOD.replace("[projects.repo]", "[projects.Repo]").replace('["repo"]', '["Repo"]'), "a project key is"),
        (GOOD + '[projects.again]\npath = "repo"\n', "is served already as 'repo'"),
        ('database = "mysql://x"\n' + GOOD, "postgresql:// URL"),
        (GOOD.split("[tokens.t]")[0], "at least one [tokens.<name>]"),
        ("[projects\n", "not valid TOML"),
    ],
)
def test_a_bad_projects_file_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_projects(write_file(tmp_path, text), env={})
    assert message in str(error.value)


def test_a_project_gets_its_key_and_the_shared_database(tmp_path: Path) -> None:
    url = "postgresql://memrouter@db.example:5432/memory"
    served = load_projects(write_file(tmp_path, f'database = "{url}"\n' + GOOD), env={"MEMROUTER_INDEX_DIR": "/x"})
    config = served.config("repo", env={"MEMROUTER_INDEX_DIR": str(tmp_path / "elsewhere")})
    assert config.root == tmp_path / "repo" / ".serena" / "memories"
    assert config.index.url == url and config.project_key == "repo"
    assert config.index_dir == tmp_path / "repo" / ".memrouter"  # not the server's MEMROUTER_INDEX_DIR
    assert served.grant_for(b"s3cret") is not None and served.grant_for(b"s3cre") is None
    from_env = load_projects(write_file(tmp_path, GOOD), env={"MEMROUTER_DATABASE_URL": url})
    assert from_env.database == url


def test_projects_refuses_a_token_and_a_root(tmp_path: Path) -> None:
    file = write_file(tmp_path, GOOD)
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(tmp_path), "serve", "--projects", str(file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "come from the file" in done.stderr
    bad = write_file(tmp_path, GOOD.replace('"repo"]', '"nope"]'))
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "serve", "--projects", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "no such project(s): nope" in done.stderr


def test_which_calls_a_read_only_token_may_make() -> None:
    from memrouter.mcp.multi import _writing_call

    reads = frozenset({"search_memory", "get_memory"})

    def call(name: object) -> dict[str, object]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}

    assert _writing_call(json.dumps(call("search_memory")).encode(), reads) is None
    assert _writing_call(json.dumps(call("save_memory")).encode(), reads) == "'save_memory'"
    assert _writing_call(json.dumps([call("get_memory"), call("edit_memory")]).encode(), reads) == "'edit_memory'"
    assert _writing_call(json.dumps(call(7)).encode(), reads) == "a tool call without a name"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert _writing_call(json.dumps(listing).encode(), reads) is None
    assert _writing_call(b"not json", reads) is None  # the MCP app refuses it
    assert _writing_call(b"\xff\xfe", reads) is None


def test_a_repository_without_a_git_remote_is_named_by_the_file_s_key(tmp_path: Path) -> None:
    url = "postgresql://memrouter@db.example:5432/memory"
    served = load_projects(write_file(tmp_path, GOOD), env={"MEMROUTER_DATABASE_URL": url})
    # the environment's database reaches Config.load, which needs a key: the file's, not the (absent) remote
    config = served.config("repo", env={"MEMROUTER_DATABASE_URL": url, "MEMROUTER_PROJECT": "someone-else"})
    assert config.index.url == url and config.project_key == "repo"
