"""The claude-flow bridge without claude-flow: its configuration, its ledger, and a server that is down.

The bridge against the real claude-flow server is tested in
``interop/tests/test_claude_flow.py`` (``make interop``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memrouter.config.settings import Config
from memrouter.core.errors import ConfigError
from memrouter.team import Team
from memrouter.team.bridge import ClaudeFlowBridge, ClaudeFlowConfig, open_bridge
from memrouter.team.bridge.client import parse_claimant
from memrouter.team.bridge.ledger import Ledger
from memrouter.team.bridge.sync_pass import digest, local_priority, remote_priority

MISSING = ["/nonexistent/claude-flow-cli", "mcp", "start"]


def project(tmp_path: Path, toml: str) -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    (tmp_path / "memrouter.toml").write_text(toml, encoding="utf-8")
    return tmp_path


def test_the_section_is_read_with_its_defaults_and_a_folder_relative_to_the_project(tmp_path: Path) -> None:
    config = ClaudeFlowConfig.from_section({"command": "npx claude-flow@3.43.0 mcp start", "cwd": "state/cf"}, tmp_path)
    assert config.command == ("npx", "claude-flow@3.43.0", "mcp", "start")
    assert config.cwd == tmp_path / "state" / "cf"
    assert (config.timeout, config.interval, config.health_ttl, config.workflow) == (5.0, 5.0, 30.0, None)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({}, "command must be a non-empty list"),
        ({"command": []}, "command must be a non-empty list"),
        ({"command": ["node", 3]}, "command must be a non-empty list"),
        ({"command": ["node"], "timeout": 0}, "timeout must be a number"),
        ({"command": ["node"], "interval": "often"}, "interval must be a number"),
        ({"command": ["node"], "health_ttl": True}, "health_ttl must be a number"),
        ({"command": ["node"], "workflow": 7}, "workflow must be a workflow id"),
        ({"command": ["node"], "comand": ["typo"]}, "unknown keys: comand"),
    ],
)
def test_a_bad_section_is_a_clear_error(tmp_path: Path, section: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ClaudeFlowConfig.from_section(section, tmp_path)


def test_config_keeps_the_section_and_refuses_one_that_is_not_a_table(tmp_path: Path) -> None:
    root = project(tmp_path, '[team.claude_flow]\ncommand = ["node", "cli.js", "mcp", "start"]\ninterval = 2\n')
    config = Config.load(cwd=root, env={})
    assert config.claude_flow == {"command": ["node", "cli.js", "mcp", "start"], "interval": 2}
    assert Config.load(cwd=project(tmp_path / "b", ""), env={}).claude_flow is None
    (tmp_path / "memrouter.toml").write_text("[team]\nclaude_flow = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[team.claude_flow\] must be tables"):
        Config.load(cwd=root, env={})


def test_a_server_that_cannot_start_stops_no_team_operation(tmp_path: Path) -> None:
    with Team.open(tmp_path / "idx") as team:
        config = ClaudeFlowConfig(tuple(MISSING), tmp_path / "cf", health_ttl=60.0)
        bridge = ClaudeFlowBridge.open(team, config, tmp_path / "idx")
        try:
            team.register("m1")
            task = team.task_add("Write the parser", agent_id="m1")
            first = bridge.sync()
            assert not first.up and "claude-flow-cli" in (first.error or "") and first.writes == 0
            assert bridge.sync().up is False and bridge.health.probes == 1  # the failure is cached
            assert bridge.board() == {"source": "claude-flow", "up": False, "error": first.error}
            # The team channel is untouched and keeps working.
            assert team.task_claim("m1", task_id=task.id) is not None
            assert team.task_get(task.id).agent == "m1"
        finally:
            bridge.close()
    assert (tmp_path / "idx" / "team.sqlite").exists()


def test_open_bridge_reads_the_project_configuration(tmp_path: Path) -> None:
    root = project(tmp_path, f'[team.claude_flow]\ncommand = {json.dumps(MISSING)}\ncwd = "cf"\n')
    config = Config.load(cwd=root, env={})
    with Team.open(config.index_dir) as team:
        bridge = open_bridge(config, team)
        assert bridge is not None
        try:
            assert (root / "cf").is_dir() and bridge.sync().up is False
        finally:
            bridge.close()


def test_the_cli_says_when_there_is_nothing_to_sync_with_and_when_claude_flow_is_down(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memrouter", "team", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    root = project(tmp_path, "")
    unconfigured = run("sync")
    assert unconfigured.returncode != 0 and "no [team.claude_flow] section" in unconfigured.stderr
    (root / "memrouter.toml").write_text(f"[team.claude_flow]\ncommand = {json.dumps(MISSING)}\n", encoding="utf-8")
    down = run("sync", "--format", "json")
    assert down.returncode == 0 and json.loads(down.stdout)["up"] is False
    status = run("status")
    assert status.returncode == 0 and "claude-flow: down" in status.stdout


def test_the_ledger_round_trips_and_survives_reopening(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "claude-flow.sqlite")
    ledger.put("task", "local-1", "task-99", "memrouter")
    ledger.put("task", "local-1", "task-100", "memrouter")
    ledger.put("var", "ns\x1fkey", None, "abc")
    ledger.close()
    ledger = Ledger(tmp_path / "claude-flow.sqlite")
    assert ledger.get("task", "local-1") == ("task-100", "memrouter")
    assert ledger.by_remote("task", "task-100") == "local-1" and ledger.by_remote("task", "task-99") is None
    ledger.drop("var", "ns\x1fkey")
    assert ledger.all("var") == {}
    ledger.close()


def test_values_compare_as_claude_flow_gives_them_back() -> None:
    # claude-flow parses a stored string that holds JSON: both forms are the same value.
    assert digest('{"a": 1}') == digest({"a": 1}) and digest("plain") != digest("other")
    assert parse_claimant("agent:c1:coder") == ("c1", "coder")
    assert parse_claimant({"agentId": "m1", "agentType": "memrouter"}) == ("m1", "memrouter")
    assert parse_claimant("human:user-1:Alice") == ("user-1", "Alice")
    assert [remote_priority(p) for p in (-3, 0, 4, 12)] == ["low", "normal", "high", "critical"]
    assert [local_priority(p) for p in ("low", "normal", "high", "critical", "odd")] == [-1, 0, 5, 10, 0]


def test_the_runner_keeps_passing_while_claude_flow_is_down_and_stops_cleanly(tmp_path: Path) -> None:
    from memrouter.team.bridge import BridgeRunner

    closed: list[bool] = []
    with Team.open(tmp_path / "idx") as team:
        config = ClaudeFlowConfig(tuple(MISSING), tmp_path / "cf", interval=0.5, health_ttl=0.0)
        runner = BridgeRunner(
            ClaudeFlowBridge.open(team, config, tmp_path / "idx"), 0.5, on_stop=lambda: closed.append(True)
        )
        runner.start()
        deadline = time.monotonic() + 30
        while runner.passes < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        runner.stop()
        assert runner.passes >= 2 and closed == [True]
        assert runner.bridge.last is not None and runner.bridge.last.up is False
        assert team.task_add("still fine").state == "queued"


def test_every_key_of_the_section_reaches_the_bridge(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        f'[team.claude_flow]\ncommand = {json.dumps(MISSING)}\ncwd = "state"\nworkflow = "w1"\n'
        "timeout = 7\ninterval = 2.5\nhealth_ttl = 11\n",
    )
    config = Config.load(cwd=root, env={})
    with Team.open(config.index_dir) as team:
        bridge = open_bridge(config, team)
        assert bridge is not None
        try:
            assert bridge.client.session.timeout == 7.0 and bridge.interval == 2.5 and bridge.health.ttl == 11.0
            assert bridge.workflow == "w1" and (root / "state").is_dir()
        finally:
            bridge.close()
