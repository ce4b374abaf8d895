"""Escalation: a team finding becomes an investigation note in the open sprint (library, CLI, MCP)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memrouter import Router
from memrouter.core.errors import InvalidInput


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".serena" / "memories").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def open_router(project: Path) -> Router:
    return Router.open(root=project / ".serena" / "memories", index_dir=project / ".memrouter", watch=False)


def fenced_json(text: str) -> Any:
    match = re.search(r"```json\n(.*?)\n```", text, re.DOTALL)
    assert match is not None, text
    return json.loads(match.group(1))


def test_escalate_writes_an_investigation_note_into_the_open_sprint(project: Path) -> None:
    with open_router(project) as router:
        router.lifecycle.start("s1", weeks=2, goal=None)
        context = {"workflow_id": "w1", "tasks": [{"id": "t1", "state": "done"}], "note": "```tricky```"}
        note = router.escalate("Parser leaks file handles\n\nSeen under load in CI.", context, author="agent:alice")
        assert note.name == "sprints/s1/parser-leaks-file-handles"
        assert (note.kind, note.channel, note.source, note.author) == (
            "investigation", "sprint", "team_escalation", "agent:alice",
        )  # fmt: skip
        assert note.title == "Parser leaks file handles"
        text = router.get(note.name).text
        assert "Seen under load in CI." in text and "````json" in text  # a fence the context cannot close
        assert json.loads(text.split("````json\n", 1)[1].split("\n````", 1)[0]) == context
        assert router.search("file handles leak", mode="lexical")[0].name == note.name


@pytest.mark.parametrize(
    ("summary", "context", "message"),
    [("", None, "needs a summary"), ("found", [1, 2], "JSON object"), ("found", {"x": object()}, "not JSON"),
     ("found", {"x": "y" * 60_000}, "limit")],
)  # fmt: skip
def test_bad_escalations_change_nothing(project: Path, summary: str, context: Any, message: str) -> None:
    with open_router(project) as router:
        router.lifecycle.start("s1", weeks=2, goal=None)
        before = sorted(p.name for p in (project / ".serena" / "memories").rglob("*.md"))
        with pytest.raises(InvalidInput, match=message):
            router.escalate(summary, context)
        assert sorted(p.name for p in (project / ".serena" / "memories").rglob("*.md")) == before


def test_escalate_without_an_open_sprint_says_how_to_open_one(project: Path) -> None:
    with open_router(project) as router, pytest.raises(InvalidInput, match="sprint start"):
        router.escalate("a finding", {})


def run(project: Path, *args: str, code: int = 0) -> Any:
    done = subprocess.run([sys.executable, "-m", "memrouter", *args, "--format", "json"], cwd=project,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == code, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else done.stderr


def test_cli_workflow_complete_escalates_its_summary(project: Path) -> None:
    workflow = run(project, "team", "workflow", "start", "audit")
    refused = run(project, "team", "workflow", "complete", workflow["id"], "--summary", "x", "--escalate", code=2)
    assert "sprint start" in refused
    with open_router(project) as router:
        assert router.team().workflow(workflow["id"]).state == "active"  # refused before anything was cleared
    run(project, "sprint", "start", "s2")
    done = run(
        project, "team", "workflow", "complete", workflow["id"], "--summary", "Cache misses double", "--escalate"
    )
    assert done["escalated_to"] == "sprints/s2/cache-misses-double"
    with open_router(project) as router:
        note = router.get(done["escalated_to"])
    assert note.source == "team_escalation" and fenced_json(note.text)["workflow_id"] == workflow["id"]


@pytest.mark.anyio
async def test_mcp_workflow_complete_escalates_as_the_calling_agent(project: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService

    with open_router(project) as router:
        router.lifecycle.start("s3", weeks=1, goal=None)
        workflow = router.team().workflow_start("probe")
        async with Client(
            create_server(MemoryService(router), tools="all"), client_info=Implementation(name="carol", version="1")
        ) as carol:
            empty = await carol.call_tool("workflow_complete", {"workflow_id": workflow.id, "escalate": True})
            assert empty.is_error and "summary" in empty.content[0].text
            result = await carol.call_tool(
                "workflow_complete", {"workflow_id": workflow.id, "summary": "Queue stalls at 10k", "escalate": True}
            )
            assert not result.is_error, result.content[0].text
            name = result.structured_content["escalated_to"]
        note = router.get(name)
    assert name == "sprints/s3/queue-stalls-at-10k" and note.author == "agent:carol"
