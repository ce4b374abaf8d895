"""memrouter's team channel and the real claude-flow 3.43.0 MCP server, coordinating one workflow.

Agent ``m1`` uses memrouter's team channel; agent ``c1`` uses claude-flow's
own MCP tools, over its own server process on the same state folder. The
bridge passes between them (``ClaudeFlowBridge.sync``) are what ``memrouter
serve`` runs every few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_peers import WORK

from memrouter.external.backends._mcp import McpSession, stdio_client_factory
from memrouter.team import Team
from memrouter.team.bridge import ClaudeFlowBridge, ClaudeFlowConfig

CLI = WORK / "claude-flow" / "node_modules" / "claude-flow" / "bin" / "cli.js"


@pytest.fixture(scope="session")
def claude_flow_cli() -> Path:
    if not CLI.exists():  # never skipped: setup.sh installs it, so missing is a failure
        note = WORK / "missing-claude-flow"
        pytest.fail(note.read_text() if note.exists() else f"{CLI} is missing; run interop/setup.sh (make interop)")
    return CLI


class Tools:
    """claude-flow's MCP tools called by name, as an agent that uses claude-flow directly would."""

    def __init__(self, cli: Path, folder: Path, log: Path) -> None:
        env = {**os.environ, "CLAUDE_FLOW_DISABLE_BRIDGE": "1"}
        self.log = log.open("a")
        factory = stdio_client_factory(["node", str(cli), "mcp", "start"], env=env, cwd=str(folder), errlog=self.log)
        self.session = McpSession(factory, label="c1", timeout=30, connect_timeout=60)

    def close(self) -> None:
        self.session.close()
        self.log.close()

    def __call__(self, tool: str, **arguments: Any) -> Any:
        result = self.session.call_tool(tool, arguments)
        assert not result.is_error, result
        return json.loads(result.content[0].text)  # type: ignore[union-attr]


@pytest.fixture
def world(claude_flow_cli: Path, tmp_path: Path) -> Iterator[tuple[Team, ClaudeFlowBridge, Tools, str]]:
    folder = tmp_path / "cf"
    folder.mkdir()
    team = Team.open(tmp_path / "idx")
    workflow = team.workflow_start("release").id
    # The bridge's server is started through a shell that records its PID, so a test can kill it.
    command = ["sh", "-c", f'echo $$ > "{tmp_path}/cf.pid"; exec node "{claude_flow_cli}" mcp start']
    config = ClaudeFlowConfig.from_section({"command": command, "workflow": workflow, "health_ttl": 0}, tmp_path)
    config = ClaudeFlowConfig(config.command, folder, workflow, timeout=30, health_ttl=0)
    bridge = ClaudeFlowBridge.open(team, config, tmp_path / "idx")
    tools = Tools(claude_flow_cli, folder, tmp_path / "c1.log")
    team.register("m1", ["docs"], workflow)
    try:
        yield team, bridge, tools, workflow
    finally:
        tools.close()
        bridge.close()
        team.close()


def remote_id(tools: Tools, description: str) -> str:
    found = [t["taskId"] for t in tools("task_list")["tasks"] if t["description"] == description]
    assert len(found) == 1, found
    return str(found[0])


def claim_holder(tools: Tools, issue: str) -> str | None:
    for claim in tools("claims_list", status="all")["claims"]:
        if claim["issueId"] == issue and claim["status"] != "completed":
            c = claim["claimant"]
            return f"agent:{c['agentId']}:{c['agentType']}"
    return None


def test_a_task_made_in_memrouter_is_completed_in_claude_flow(world: Any) -> None:
    team, bridge, tools, _ = world
    task = team.task_add("Write the changelog", priority=3, agent_id="m1")
    first = bridge.sync()
    assert first.up and first.writes >= 1 and not first.conflicts
    issue = remote_id(tools, "Write the changelog")
    assert tools("task_status", taskId=issue)["tags"] == ["memrouter", f"memrouter-task:{task.id}"]

    assert tools("claims_claim", issueId=issue, claimant="agent:c1:coder")["success"]
    bridge.sync()
    held = team.task_get(task.id)
    assert held.state == "claimed" and held.agent == "claude-flow:c1"
    assert team.task_claim("m1") is None  # claude-flow's agent holds it

    tools("task_complete", taskId=issue, result={"pages": 3})
    report = bridge.sync()
    done = team.task_get(task.id)
    assert done.state == "done" and done.result == {"pages": 3}, report
    assert bridge.sync().writes == 0  # converged: nothing left to write


def test_a_task_made_in_claude_flow_is_completed_in_memrouter(world: Any) -> None:
    team, bridge, tools, workflow = world
    made = tools("task_create", type="feature", description="Review the API", priority="high")
    report = bridge.sync()
    assert any("queued from claude-flow" in line for line in report.imported)
    task = team.task_claim("m1")
    assert task is not None and task.title == "Review the API" and task.workflow_id == workflow
    bridge.sync()
    assert claim_holder(tools, made["taskId"]) == "agent:m1:memrouter"

    team.task_complete(task.id, {"approved": True}, agent_id="m1")
    bridge.sync()
    remote = tools("task_status", taskId=made["taskId"])
    assert remote["status"] == "completed" and remote["result"] == {"approved": True}
    assert bridge.sync().writes == 0


def test_handoffs_cross_over_both_ways(world: Any) -> None:
    team, bridge, tools, _ = world
    task = team.task_add("Fix the release script", agent_id="m1")
    bridge.sync()
    issue = remote_id(tools, "Fix the release script")
    # c1 holds it first, so memrouter knows c1 (as its proxy agent claude-flow:c1) ...
    tools("claims_claim", issueId=issue, claimant="agent:c1:coder")
    bridge.sync()
    # ... and hands it to m1 on claude-flow's board: m1 sees a pending handoff in memrouter and accepts it there.
    tools("claims_handoff", issueId=issue, **{"from": "agent:c1:coder", "to": "agent:m1:memrouter"}, reason="yours")
    bridge.sync()
    (offer,) = team.pending_handoffs("m1")
    assert offer.from_agent == "claude-flow:c1" and offer.task_id == task.id
    assert offer.context["claude_flow"]["reason"] == "yours"
    team.handoff_accept(offer.id, "m1")
    bridge.sync()
    assert claim_holder(tools, issue) == "agent:m1:memrouter"
    assert team.task_get(task.id).agent == "m1"

    # m1 hands it back to c1 in memrouter; c1 accepts with claude-flow's tool.
    back = team.handoff("m1", "claude-flow:c1", {"why": "review"}, task.id)
    bridge.sync()
    board = tools("claims_board")["board"]["handoff-pending"]
    assert board == [{"issueId": issue, "from": "agent:m1:memrouter", "to": "agent:c1:coder"}]
    assert tools("claims_accept-handoff", issueId=issue, claimant="agent:c1:coder")["success"]
    report = bridge.sync()
    assert team.handoff_get(back.id).state == "accepted", report
    assert team.task_get(task.id).agent == "claude-flow:c1"
    assert not report.conflicts


def test_shared_variables_agree_and_a_double_claim_is_a_conflict(world: Any, tmp_path: Path) -> None:
    team, bridge, tools, workflow = world
    namespace = f"memrouter.{workflow}"
    team.team_set("release", {"version": "1.2"}, ttl=3600, workflow=workflow)
    bridge.sync()
    assert tools("memory_retrieve", key="release", namespace=namespace)["value"] == {"version": "1.2"}
    agent = tools("memory_retrieve", key="m1", namespace=namespace + ".agents")["value"]
    assert agent["status"] == "idle" and agent["source"] == "memrouter"

    tools("memory_store", key="release", value={"version": "1.3"}, namespace=namespace)
    tools("memory_store", key="owner", value="c1", namespace=namespace)
    bridge.sync()
    assert team.team_get("release").value == {"version": "1.3"}
    assert team.team_get("owner").value == "c1"

    # Both sides change one value before a pass: reported, neither overwritten.
    team.team_set("release", {"version": "2.0"}, workflow=workflow)
    tools("memory_store", key="release", value={"version": "1.4"}, namespace=namespace)
    # One task claimed on both sides before a pass.
    task = team.task_add("Tag the release", agent_id="m1")
    bridge.sync()
    issue = remote_id(tools, "Tag the release")
    tools("claims_claim", issueId=issue, claimant="agent:c1:coder")
    assert team.task_claim("m1", task_id=task.id) is not None
    report = bridge.sync()
    assert any("release" in text and "both" in text for text in report.conflicts), report
    assert any(task.id in text and "agent:c1:coder" in text for text in report.conflicts), report
    assert team.team_get("release").value == {"version": "2.0"}
    assert tools("memory_retrieve", key="release", namespace=namespace)["value"] == {"version": "1.4"}
    assert claim_holder(tools, issue) == "agent:c1:coder" and team.task_get(task.id).agent == "m1"

    # `memrouter team status` shows both boards, the source of each line and the conflict.
    (tmp_path / "memrouter.toml").write_text(
        f'[team.claude_flow]\ncommand = ["node", "{CLI}", "mcp", "start"]\ncwd = "cf"\nworkflow = "{workflow}"\n',
        encoding="utf-8",
    )
    (tmp_path / ".git").mkdir()
    shown = subprocess.run(
        [sys.executable, "-m", "memrouter", "--index-dir", str(tmp_path / "idx"), "team", "status", "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    board = json.loads(shown.stdout)["claude_flow"]
    assert board["up"] and board["source"] == "claude-flow"
    assert {"issue": issue, "holder": "agent:c1:coder", "task": task.id}.items() <= board["claims"][0].items()
    assert any(task.id in text for text in board["conflicts"])


def test_claude_flow_killed_mid_workflow(world: Any, tmp_path: Path) -> None:
    team, bridge, tools, workflow = world
    first = team.task_add("Before the crash", agent_id="m1")
    assert bridge.sync().up
    os.kill(int((tmp_path / "cf.pid").read_text()), signal.SIGKILL)

    # memrouter's team channel keeps working; the pass says claude-flow is down and changes nothing.
    second = team.task_add("During the outage", agent_id="m1")
    team.team_set("phase", "outage", workflow=workflow)
    claimed = team.task_claim("m1", task_id=first.id)
    assert claimed is not None
    down = bridge.sync()
    assert not down.up and down.error

    # It comes back (started again on the next call): everything written meanwhile is mirrored.
    back = bridge.sync()
    assert back.up and not back.conflicts, back
    remote_id(tools, "During the outage")
    assert claim_holder(tools, remote_id(tools, "Before the crash")) == "agent:m1:memrouter"
    assert tools("memory_retrieve", key="phase", namespace=f"memrouter.{workflow}")["value"] == "outage"
    assert bridge.sync().writes == 0
    assert len([t for t in tools("task_list")["tasks"] if t["description"] == "During the outage"]) == 1
    assert team.task_get(second.id).state == "queued"


def test_a_lost_ledger_creates_no_duplicates(world: Any, tmp_path: Path) -> None:
    team, bridge, tools, _ = world
    team.task_add("Only once", agent_id="m1")
    bridge.sync()
    bridge.ledger.close()
    (tmp_path / "idx" / "claude-flow.sqlite").unlink()
    from memrouter.team.bridge.ledger import Ledger

    bridge.ledger = Ledger(tmp_path / "idx" / "claude-flow.sqlite")
    bridge.sync()
    assert len([t for t in tools("task_list")["tasks"] if t["description"] == "Only once"]) == 1


def test_the_serve_runner_mirrors_without_being_asked(world: Any) -> None:
    from memrouter.team.bridge import BridgeRunner

    team, bridge, tools, _ = world
    runner = BridgeRunner(bridge, 0.5).start()
    try:
        team.task_add("Mirrored in the background", agent_id="m1")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(t["description"] == "Mirrored in the background" for t in tools("task_list")["tasks"]):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the runner mirrored nothing in 60 s: {bridge.last}")
    finally:
        runner.stop(close=False)  # the fixture closes the bridge


def test_processes_passing_at_once_create_each_task_once(world: Any, tmp_path: Path) -> None:
    """Three ``memrouter team sync`` processes on one index at once: their passes take turns."""
    team, _, tools, workflow = world
    TASKS = 60  # a pass long enough (one call per task) that the processes' passes overlap
    for n in range(TASKS):
        team.task_add(f"Parallel {n}", agent_id="m1")
    (tmp_path / "memrouter.toml").write_text(
        f'[team.claude_flow]\ncommand = ["node", "{CLI}", "mcp", "start"]\ncwd = "cf"\nworkflow = "{workflow}"\n'
        "timeout = 30\n",
        encoding="utf-8",
    )
    (tmp_path / ".git").mkdir(exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "memrouter",
        "--index-dir",
        str(tmp_path / "idx"),
        "team",
        "sync",
        "--format",
        "json",
    ]
    runs = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)]  # fmt: skip
    reports = [json.loads(run.communicate(timeout=180)[0]) for run in runs]
    assert all(report["up"] and not report["conflicts"] for report in reports), reports
    assert sum(report["writes"] for report in reports) >= TASKS
    names = sorted(t["description"] for t in tools("task_list", limit=1000)["tasks"])
    assert names == sorted(f"Parallel {n}" for n in range(TASKS))


def test_a_completed_workflow_s_values_leave_claude_flow(world: Any) -> None:
    team, bridge, tools, workflow = world
    namespace = f"memrouter.{workflow}"
    team.team_set("scratch", {"step": 1}, workflow=workflow)
    team.team_set("kept", "yes", workflow=workflow)
    bridge.sync()
    assert tools("memory_retrieve", key="scratch", namespace=namespace)["found"]
    tools("memory_store", key="kept", value="changed by c1", namespace=namespace)
    team.workflow_complete(workflow)
    report = bridge.sync()
    assert not tools("memory_retrieve", key="scratch", namespace=namespace)["found"]
    assert tools("memory_retrieve", key="kept", namespace=namespace)["value"] == "changed by c1"
    assert any("kept" in text and "left there" in text for text in report.conflicts), report
    assert bridge.sync().writes == 0 and not bridge.sync().conflicts
