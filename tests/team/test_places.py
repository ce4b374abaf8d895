"""Where agents work: the branch and worktree git reports, recorded at registration, in the roster and handoffs.

A real repository with a main checkout and worktrees (`git worktree add`), agents registering from each through
the CLI (real processes) and the MCP tools (the real SDK client), one team channel (a shared index folder).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import git, git_project

from memrouter.team import Team
from memrouter.team.store import MIGRATIONS


def memrouter(cwd: Path, index_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memrouter", "--index-dir", str(index_dir), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def repository(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The main checkout (on main), a worktree on feat-x and a detached worktree."""
    project, root = git_project(tmp_path)
    (root / "note.md").write_text("# A note\n\nText.\n")
    git(project, "add", "-A")
    git(project, "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", "first")
    feature = tmp_path / "wt-feat-x"
    git(project, "worktree", "add", "-q", str(feature), "-b", "feat-x")
    detached = tmp_path / "wt-detached"
    git(project, "worktree", "add", "-q", "--detach", str(detached))
    return project, feature, detached


def test_the_cli_records_each_agents_branch_and_worktree(tmp_path: Path) -> None:
    project, feature, detached = repository(tmp_path)
    shared = tmp_path / "team-index"
    assert memrouter(project, shared, "team", "register", "alice").returncode == 0
    done = memrouter(feature, shared, "team", "register", "bob")
    assert done.returncode == 0 and done.stdout.strip() == f"registered bob (branch feat-x, worktree {feature})"
    assert memrouter(detached, shared, "team", "register", "carol").returncode == 0
    # an agent registered from elsewhere may say which checkout it works in
    assert (
        memrouter(project, shared, "team", "register", "dave", "--worktree", str(feature / ".serena")).returncode == 0
    )

    state = json.loads(memrouter(project, shared, "team", "status", "--format", "json").stdout)
    places = {entry["agent"]["id"]: (entry["agent"]["branch"], entry["agent"]["worktree"]) for entry in state["agents"]}
    assert places == {"alice": ("main", str(project)), "bob": ("feat-x", str(feature)),
                      "carol": (None, str(detached)), "dave": ("feat-x", str(feature))}  # fmt: skip
    roster = memrouter(project, shared, "team", "status").stdout
    assert f"(branch feat-x, worktree {feature})" in roster and f"(worktree {detached})" in roster

    offer = memrouter(feature, shared, "team", "handoff", "--from", "bob", "--to", "alice", "--context", '{"a": 1}')
    assert offer.returncode == 0, offer.stderr
    pending = json.loads(memrouter(project, shared, "team", "handoff", "pending", "--agent", "alice",
                                   "--format", "json").stdout)["handoffs"]  # fmt: skip
    assert [(h["from_agent"], h["branch"], h["worktree"]) for h in pending] == [("bob", "feat-x", str(feature))]
    text = memrouter(project, shared, "team", "handoff", "pending", "--agent", "alice").stdout
    assert text.strip().endswith(f"from bob (branch feat-x, worktree {feature})")


def test_a_worktree_that_is_not_a_checkout_is_refused_and_nothing_is_registered(tmp_path: Path) -> None:
    project, feature, _ = repository(tmp_path)
    shared = tmp_path / "team-index"
    outside = tmp_path / "not-a-repository"
    outside.mkdir()
    for bad in (str(outside), str(tmp_path / "missing"), ""):
        done = memrouter(project, shared, "team", "register", "eve", "--worktree", bad)
        assert done.returncode == 2 and "worktree" in done.stderr
    state = json.loads(memrouter(project, shared, "team", "status", "--format", "json").stdout)
    assert state["agents"] == []
    # a worktree removed by hand: its folder is gone, so an agent there cannot say it works there
    subprocess.run(["rm", "-rf", str(feature)], check=True)
    assert memrouter(project, shared, "team", "register", "eve", "--worktree", str(feature)).returncode == 2
    # a repository with no commit yet: its branch is the one HEAD names
    empty, _ = git_project(tmp_path / "empty")
    done = memrouter(empty, shared, "team", "register", "eve", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert (json.loads(done.stdout)["branch"], json.loads(done.stdout)["worktree"]) == ("main", str(empty))


async def _call(client: Any, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


@pytest.mark.anyio
async def test_the_mcp_tools_record_where_agents_work_and_handoffs_carry_it(tmp_path: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.router import Router

    project, feature, _ = repository(tmp_path)
    with Router.open(root=project / ".serena" / "memories", index_dir=tmp_path / "index", watch=False) as router:
        server = create_server(MemoryService(router), tools="all")
        async with (
            Client(server, client_info=Implementation(name="alice", version="1")) as alice,
            Client(server, client_info=Implementation(name="bob", version="1")) as bob,
        ):
            assert (await _call(alice, "team_register"))["branch"] == "main"  # the server's own checkout
            registered = await _call(bob, "team_register", worktree=str(feature))
            assert (registered["branch"], registered["worktree"]) == ("feat-x", str(feature))
            state = await _call(alice, "team_state", agent_id="bob")
            assert state["agents"][0]["agent"]["branch"] == "feat-x"
            offer = await _call(bob, "handoff", to_agent="alice", context={"next": "tests"})
            assert (offer["branch"], offer["worktree"]) == ("feat-x", str(feature))
            taken = await _call(alice, "handoff_respond", handoff_id=offer["id"], accept=True)
            assert (taken["state"], taken["branch"]) == ("accepted", "feat-x")
            refused = await bob.call_tool("team_register", {"worktree": str(tmp_path / "missing")})
            assert refused.is_error and "is not a folder in a git work tree" in refused.content[0].text
            assert (await _call(alice, "team_state", agent_id="bob"))["agents"][0]["agent"]["branch"] == "feat-x"


def test_a_channel_made_before_places_is_migrated_and_keeps_its_agents(tmp_path: Path) -> None:
    folder = tmp_path / ".memrouter"
    folder.mkdir()
    conn = sqlite3.connect(folder / "team.sqlite")
    conn.executescript(MIGRATIONS[0][1] + ";PRAGMA user_version = 1;")
    conn.execute("INSERT INTO agents (id, workflow_id, capabilities, status, message, registered_at, heartbeat_at, "
                 "ttl) VALUES ('old', NULL, '[]', 'idle', NULL, 1, 1, 1e9)")  # fmt: skip
    conn.commit()
    conn.close()
    with Team.open(folder) as team:
        old = team.get_team_state("old").agents[0].agent
        assert (old.id, old.branch, old.worktree) == ("old", None, None)
        assert team.register("new", branch="main", worktree="/w").branch == "main"
