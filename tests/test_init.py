"""``memrouter init``: each client's file read back with its format's parser, the server started from exactly
the command written there by the official MCP SDK client, merges that keep other servers, idempotence,
--dry-run, and Claude Code itself connecting to the server (``claude mcp list``)."""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from docpages import DOCS

from memrouter.cli import main
from memrouter.ops.clients import CLIENTS, GUIDE, launcher, plan_init
from memrouter.ops.textedit import marked_section

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
CLAUDE_DIR = REPO / ".artifacts" / "claude-code"

# client -> (its file, how to read the server's entry from the parsed file)
CONFIG = {
    "claude-code": (".mcp.json", lambda data: data["mcpServers"]["memrouter"]),
    "cursor": (".cursor/mcp.json", lambda data: data["mcpServers"]["memrouter"]),
    "codex": (".codex/config.toml", lambda data: data["mcp_servers"]["memrouter"]),
    "vscode": (".vscode/mcp.json", lambda data: data["servers"]["memrouter"]),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def repository(base: Path) -> Path:
    project = base / "app"
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src" / "app.py").write_text("print('hello')\n")
    return project


def run_init(project: Path, *args: str) -> Any:
    cwd = os.getcwd()
    os.chdir(project / "src")  # init finds the repository from a subfolder too
    try:
        return CliRunner().invoke(main, ["init", *args], catch_exceptions=False)
    finally:
        os.chdir(cwd)


def parsed(client: str, project: Path) -> dict[str, Any]:
    relative, entry = CONFIG[client]
    text = (project / relative).read_text(encoding="utf-8")
    data = tomllib.loads(text) if relative.endswith(".toml") else json.loads(text)
    found: dict[str, Any] = entry(data)
    return found


def snapshot(project: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(project)): p.read_bytes() for p in sorted(project.rglob("*")) if p.is_file() and ".git" not in p.parts
    }  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("client", CLIENTS)
async def test_each_client_starts_the_server_from_exactly_the_written_command(client: str, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    project = repository(tmp_path)
    done = run_init(project, "--client", client)
    assert done.exit_code == 0, done.output
    entry = parsed(client, project)
    if client == "vscode":
        assert entry["type"] == "stdio"
    # what the client does with the entry: substitute the workspace folder, start the command in the project
    args = [arg.replace("${workspaceFolder}", str(project)) for arg in entry["args"]]
    assert entry["command"] == launcher()[0] and args[-1] == "serve"
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    params = StdioServerParameters(command=entry["command"], args=args, env=env, cwd=str(project))
    (project / ".serena" / "memories" / "deploy.md").write_text("# Deploys\n\nWe deploy on Tuesdays.\n")
    async with Client(params) as session:
        tools = await session.list_tools()
        assert len(tools.tools) >= 5
        # the server serves this project's memories
        found = await session.read_resource("memory://deploy")
        assert "We deploy on Tuesdays." in str(found.contents[0])
    guide = project / ("CLAUDE.md" if client == "claude-code" else "AGENTS.md")
    assert GUIDE.splitlines()[0] in guide.read_text()
    assert (project / ".serena" / "memories").is_dir()
    assert tomllib.loads((project / "memrouter.toml").read_text()) == {}  # every line a comment


def test_running_init_twice_changes_nothing(tmp_path: Path) -> None:
    project = repository(tmp_path)
    assert run_init(project).exit_code == 0
    first = snapshot(project)
    assert set(first) >= {".mcp.json", ".cursor/mcp.json", ".codex/config.toml", ".vscode/mcp.json",
                          ".claude/settings.json", "AGENTS.md", "CLAUDE.md", "memrouter.toml"}  # fmt: skip
    again = run_init(project, "--format", "json")
    assert {item["action"] for item in json.loads(again.output)["files"]} == {"unchanged"}
    assert snapshot(project) == first


CLAUDE_JSON = """{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
               "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}
  }
}
"""
CURSOR_JSON = '{"mcpServers":{"docs":{"url":"http://localhost:4000/mcp"}},"other":1}\n'
VSCODE_JSONC = """{
\t// the team's servers
\t"inputs": [{"type": "promptString", "id": "key", "password": true}],
\t"servers": {
\t\t"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]}, /* kept */
\t}
}
"""
CODEX_TOML = """# Codex settings for this repository
model = "o3"  # the team's model

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]   # aligned by hand
env = { "DOCS_TOKEN" = "x" }
"""
SETTINGS_JSON = """{
  "permissions": {"allow": ["Bash(make test)"]},
  "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]}
}
"""


def removed_lines(before: str, after: str) -> list[str]:
    return [line[2:] for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line.startswith("- ")]


def test_existing_configurations_keep_every_other_server_byte_for_byte(tmp_path: Path) -> None:
    project = repository(tmp_path)
    files = {
        ".mcp.json": CLAUDE_JSON, ".cursor/mcp.json": CURSOR_JSON, ".vscode/mcp.json": VSCODE_JSONC,
        ".codex/config.toml": CODEX_TOML, ".claude/settings.json": SETTINGS_JSON,
        "AGENTS.md": "# Agents\n\nRun `make test` before you push.\n", "CLAUDE.md": "@AGENTS.md\n",
    }  # fmt: skip
    for relative, text in files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    assert run_init(project).exit_code == 0
    after = {relative: (project / relative).read_text() for relative in files}
    # Only insertions; a member that gains a following member gains a comma at its line's end.
    assert removed_lines(files[".vscode/mcp.json"], after[".vscode/mcp.json"]) == []  # its comma was there
    (last,) = removed_lines(files[".mcp.json"], after[".mcp.json"])
    assert last + "," in after[".mcp.json"].splitlines()
    assert '"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],' in after[".mcp.json"]
    assert after[".cursor/mcp.json"].startswith('{"mcpServers":{"docs":{"url":"http://localhost:4000/mcp"},')
    assert after[".vscode/mcp.json"].startswith(VSCODE_JSONC.split('"fetch"')[0])
    assert after[".codex/config.toml"].startswith(CODEX_TOML)  # TOML: the new table is appended
    assert after["AGENTS.md"].startswith(files["AGENTS.md"]) and after["CLAUDE.md"].startswith("@AGENTS.md\n")
    # each file still reads as its format, with the other servers and memrouter
    assert set(json.loads(after[".mcp.json"])["mcpServers"]) == {"github", "memrouter"}
    assert json.loads(after[".cursor/mcp.json"])["other"] == 1
    codex = tomllib.loads(after[".codex/config.toml"])
    assert codex["model"] == "o3" and set(codex["mcp_servers"]) == {"docs", "memrouter"}
    settings = json.loads(after[".claude/settings.json"])
    assert settings["permissions"] == {"allow": ["Bash(make test)"]}
    commands = [hook["command"] for entry in settings["hooks"]["SessionStart"] for hook in entry["hooks"]]
    assert commands[0] == "echo hi" and commands[1].endswith(" context --max-tokens 2000")
    # an existing memrouter entry is kept as the team wrote it
    custom = json.loads(after[".mcp.json"])
    custom["mcpServers"]["memrouter"]["command"] = "memrouter"
    (project / ".mcp.json").write_text(json.dumps(custom))
    before = snapshot(project)
    assert run_init(project).exit_code == 0
    assert snapshot(project) == before


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    project = repository(tmp_path)
    (project / ".mcp.json").write_text(CLAUDE_JSON)
    before = snapshot(project)
    done = run_init(project, "--client", "claude-code,codex", "--dry-run")
    assert done.exit_code == 0, done.output
    assert snapshot(project) == before and not (project / ".serena").exists()
    assert "--- a/.mcp.json\n+++ b/.mcp.json\n" in done.output and '+    "memrouter": {' in done.output
    assert "--- /dev/null\n+++ b/.codex/config.toml\n" in done.output and "+[mcp_servers.memrouter]" in done.output
    assert ".cursor/mcp.json" not in done.output


def test_a_file_memrouter_cannot_read_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    project = repository(tmp_path)
    (project / ".mcp.json").write_text('{"mcpServers": [1, 2]}\n')
    before = snapshot(project)
    done = CliRunner().invoke(main, ["--root", str(project / ".serena" / "memories"), "init", "--client", "all"])
    assert done.exit_code == 2 and ".mcp.json" in done.output
    assert snapshot(project) == before
    done = run_init(project, "--client", "emacs")
    assert done.exit_code == 2 and "claude-code, cursor, codex, vscode" in done.output


def test_the_session_start_hook_prints_the_context(tmp_path: Path) -> None:
    project = repository(tmp_path)
    assert run_init(project, "--client", "claude-code").exit_code == 0
    (project / ".serena" / "memories" / "deploy.md").write_text("# Deploys\n\nWe deploy on Tuesdays.\n")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (hook,) = settings["hooks"]["SessionStart"][0]["hooks"]
    # as Claude Code runs a command hook: through a shell, in the project
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    done = subprocess.run(["bash", "-c", hook["command"]], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<memory_context") and "deploy: Deploys" in done.stdout


def claude_code() -> Path:
    """Claude Code from npm (the pinned version), installed once under .artifacts/; a failure fails the test."""
    binary = CLAUDE_DIR / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        CLAUDE_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(CLAUDE_DIR), CLAUDE_CODE],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0 and binary.exists(), f"cannot install {CLAUDE_CODE}: {done.stderr[-2000:]}"
    return binary


def test_claude_code_connects_to_the_server_init_wrote(tmp_path: Path) -> None:
    claude = claude_code()
    project = repository(tmp_path)
    assert run_init(project, "--client", "claude-code").exit_code == 0
    home = tmp_path / "home"
    home.mkdir()
    # a project's .mcp.json server is used once the user approved it (as Claude Code's prompt records it)
    approved = {"projects": {str(project): {"enabledMcpjsonServers": ["memrouter"], "hasTrustDialogAccepted": True}}}
    (home / ".claude.json").write_text(json.dumps(approved))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MEMROUTER_", "ANTHROPIC_"))}
    env |= {"HOME": str(home), "DISABLE_AUTOUPDATER": "1"}
    done = subprocess.run([str(claude), "mcp", "list"], cwd=project, capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    line = next((line for line in done.stdout.splitlines() if line.startswith("memrouter:")), "")
    assert shlex.join(launcher()) in line and "Connected" in line and "Failed" not in line, done.stdout


def test_each_client_page_shows_what_init_writes(tmp_path: Path) -> None:
    project = repository(tmp_path)
    for client in CLIENTS:
        page = (DOCS / f"client-{client}.md").read_text(encoding="utf-8")
        for change in plan_init(project, [client], ["memrouter"]):
            if change.relative in ("memrouter.toml", "AGENTS.md", "CLAUDE.md"):
                continue
            label = rf"(?://|#|<!--) {re.escape(change.relative)}(?: -->)?"
            shown = re.search(rf"^```\w+\n{label}\n(.*?)^```", page, re.M | re.S)
            assert shown is not None, f"client-{client}.md does not show {change.relative}"
            assert shown.group(1) == change.after, (
                f"client-{client}.md: {change.relative} differs from what init writes"
            )
    agents = (DOCS / "agents.md").read_text(encoding="utf-8")
    assert f"```markdown\n{marked_section(None, 'guide', GUIDE)}```" in agents
