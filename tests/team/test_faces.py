"""The team channel's faces: the MCP tools through the real SDK client, the CLI as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docpages import blocks


async def _call(client: Any, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


@pytest.mark.anyio
async def test_mcp_team_tools_with_client_names_and_a_pinned_agent(memories: Path, tmp_path: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.mcp.team_service import TeamService
    from memrouter.router import Router

    index_dir = tmp_path / "index"
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        server = create_server(MemoryService(router), tools="all")
        pinned = create_server(
            MemoryService(router), team=TeamService(index_dir, pinned_agent="bob", config=router.config), tools="all"
        )
        async with (
            Client(server, client_info=Implementation(name="alice", version="1")) as alice,
            Client(pinned) as bob,
        ):
            assert (await _call(alice, "team_register", capabilities=["python"]))["id"] == "alice"
            assert (await _call(bob, "team_register"))["id"] == "bob"
            refused = await bob.call_tool("team_heartbeat", {"status": "idle", "agent_id": "alice"})
            assert refused.is_error and "acts as agent 'bob'" in refused.content[0].text
            task = await _call(alice, "task_add", title="port the parser", priority=3)
            claimed = (await _call(alice, "task_claim", lease_seconds=120))["task"]
            assert claimed["id"] == task["id"]
            offer = await _call(alice, "handoff", to_agent="bob", context={"done": "half"}, task_id=task["id"])
            wrong = await alice.call_tool("handoff_respond", {"handoff_id": offer["id"], "accept": True})
            assert wrong.is_error and "only the receiving agent" in wrong.content[0].text
            assert (await _call(bob, "handoff_respond", handoff_id=offer["id"], accept=True))["state"] == "accepted"
            assert (await _call(bob, "task_complete", task_id=task["id"], result={"ok": 1}))["state"] == "done"
            granted = await _call(alice, "reserve_paths", paths=["src/**"])
            assert granted["granted"] and granted["id"]
            conflict = await _call(bob, "reserve_paths", paths=["src/parser.py"])
            assert not conflict["granted"] and conflict["conflicts"][0]["agent"] == "alice"
            assert len((await _call(alice, "release_paths"))["released"]) == 1
            await _call(bob, "team_set", key="plan", value={"step": 1}, expected_version=0)
            stale = await bob.call_tool("team_set", {"key": "plan", "value": 2, "expected_version": 0})
            assert stale.is_error and "version 1" in stale.content[0].text
            assert (await _call(alice, "team_get", key="plan"))["value"] == {"step": 1}
            state = await _call(alice, "team_state")
            assert [a["agent"]["id"] for a in state["agents"]] == ["alice", "bob"]
            await _call(bob, "team_heartbeat", status="working", message="reviewing")
            workflow = router.team().workflow_start("w")
            done = await _call(alice, "workflow_complete", workflow_id=workflow.id, summary="ok")
            assert done["id"] == workflow.id and done["workflow"]["state"] == "completed"


def _docs_walkthrough() -> str:
    """The docs' shell walkthrough of two agents, a task and a handoff."""
    return next(block.text for block in blocks("sh") if block.text.startswith("memrouter team register alice"))


def test_the_docs_walkthrough_runs_and_json_forms_carry_ids(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-e", "-c", _docs_walkthrough()], cwd=project, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    memrouter = [sys.executable, "-m", "memrouter", "team"]

    def run(*args: str, code: int = 0) -> Any:
        result = subprocess.run([*memrouter, *args, "--format", "json"], cwd=project, capture_output=True, text=True)
        assert result.returncode == code, result.stderr
        return json.loads(result.stdout) if result.stdout.strip() else None

    assert run("task", "claim", "--agent", "alice") is None  # the walkthrough's queue is empty now
    added = run("task", "add", "one more", "--priority", "1")
    assert run("task", "claim", "--agent", "alice")["id"] == added["id"]
    assert run("set", "k", "[1, 2]")["version"] == 1
    assert run("get", "k")["value"] == [1, 2]
    assert run("handoff", "accept", "0" * 32, "--agent", "bob", code=1) is None
    assert run("reserve", "../escape", "--agent", "bob", code=2) is None
    workflow = run("workflow", "start", "sprint")
    assert run("workflow", "complete", workflow["id"])["id"] == workflow["id"]
    assert {row["agent"]["id"] for row in run("status")["agents"]} == {"alice", "bob"}
