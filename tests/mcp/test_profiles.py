"""Tool profiles (``serve --tools``, ``[mcp] tools``), the small default, and the tools an agent could confuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docs_reference import profile_sizes, wire_size

from memrouter.core.errors import ConfigError
from memrouter.mcp.profiles import PROFILE_NAMES, PROFILES, parse_tools, selected_tools
from memrouter.mcp.server import SEE_ALSO

pytestmark = pytest.mark.anyio

CORE_MAX_TOOLS = 8
CORE_MAX_CHARS = 5000


async def listed(connect: Any, root: Path, index: Path, tools: str) -> dict[str, Any]:
    async with connect(root, index, tools=tools) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


def test_every_tool_is_in_exactly_one_profile() -> None:
    families = [name for name in PROFILE_NAMES if name != "all"]
    every = [tool for name in families for tool in PROFILES[name]]
    assert len(every) == len(set(every)) == len(PROFILES["all"])
    assert set(every) == set(PROFILES["all"])


def test_specifications_combine_profiles_and_tool_names() -> None:
    assert parse_tools(None) == ("core",)
    assert parse_tools(" core , git,core") == ("core", "git")
    assert selected_tools("core,git") == set(PROFILES["core"]) | set(PROFILES["git"])
    assert selected_tools(["serena", "search_memory"]) == {*PROFILES["serena"], "search_memory"}
    assert selected_tools("all") == set(PROFILES["all"])
    for bad in ("bogus", "core,nope", " , ", ""):
        with pytest.raises(ConfigError, match="tools"):
            selected_tools(bad)


def test_the_default_profile_is_small_and_unambiguous() -> None:
    sizes = {name: (count, chars, tokens) for name, count, chars, tokens in profile_sizes()}
    count, chars, tokens = sizes["core"]
    assert count == len(PROFILES["core"]) <= CORE_MAX_TOOLS
    assert chars <= CORE_MAX_CHARS and 0 < tokens < chars
    assert sizes["all"][0] == len(PROFILES["all"])
    # No two core tools are among the pairs an agent could take for one another.
    for tool, others in SEE_ALSO.items():
        for other, _ in others:
            assert not {tool, other} <= set(PROFILES["core"]), (tool, other)


async def test_the_server_offers_the_configured_profile(project_root: Path, tmp_path: Path, connect: Any) -> None:
    default = await listed(connect, project_root, tmp_path / "a", tools="core")
    assert list(default) == list(PROFILES["core"])
    from memrouter.config.settings import Config

    assert Config.load(root=project_root, index_dir=tmp_path / "a", env={}).mcp_tools == ("core",)
    (project_root.parent.parent / "memrouter.toml").write_text('[mcp]\ntools = ["core", "git"]\n')
    from mcp import Client

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.router import Router

    with Router.open(root=project_root, index_dir=tmp_path / "b", watch=False) as router:
        async with Client(create_server(MemoryService(router))) as client:  # [mcp] tools, as serve reads it
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert set(names) == set(PROFILES["core"]) | set(PROFILES["git"])
            refused = await client.call_tool("write_memory", {"memory_name": "x", "content": "y"})
            assert refused.is_error and not (project_root / "x.md").exists()


async def test_descriptions_name_the_other_tool_only_when_both_are_offered(
    project_root: Path, tmp_path: Path, connect: Any
) -> None:
    serena = await listed(connect, project_root, tmp_path / "a", tools="serena")
    both = await listed(connect, project_root, tmp_path / "b", tools="core,serena")
    assert "save_memory" not in serena["write_memory"].description
    assert "save_memory" in both["write_memory"].description
    assert "get_memory" in both["read_memory"].description
    assert "search_memory" in both["list_memories"].description
    assert "invalidate_memory" in both["delete_memory"].description
    team = await listed(connect, project_root, tmp_path / "c", tools="team,git,core")
    assert "scratchpad_write" in team["team_set"].description
    assert "team_set" in team["scratchpad_write"].description and "save_memory" in team["scratchpad_write"].description
    assert "scratchpad_write" in team["set_task_context"].description
    for tool in [*both.values(), *team.values()]:
        assert len(tool.description) <= 200, tool.name
    # Serena's six keep Serena's arguments whatever else is offered.
    assert {name: tool.input_schema for name, tool in serena.items()} == {
        name: both[name].input_schema for name in PROFILES["serena"]
    }
    assert wire_size(list(serena.values())) < wire_size(list(both.values()))


async def test_save_memory_takes_plain_text(project_root: Path, tmp_path: Path, connect: Any) -> None:
    async with connect(project_root, tmp_path / "index", tools="core") as client:
        first = await client.call_tool(
            "save_memory", {"content": "The billing API pages with cursors; offsets timed out at 10k rows."}
        )
        assert not first.is_error, first.content[0].text
        saved = first.structured_content
        assert saved["name"] == "the-billing-api-pages-with-cursors-offsets-timed"
        assert saved["title"] == "The billing API pages with cursors; offsets timed out at 10k rows"
        text = (project_root / f"{saved['name']}.md").read_text()
        assert text.endswith("---\nThe billing API pages with cursors; offsets timed out at 10k rows.\n")  # as written
        # The same first sentence, other text: a new memory beside it, never a replacement.
        second = await client.call_tool(
            "save_memory",
            {"content": "The billing API pages with cursors; offsets timed out at 10k rows.\n\nRetry with "
             "a smaller page when the gateway answers 504, and log the cursor."},
        )  # fmt: skip
        assert second.structured_content["name"] == saved["name"] + "-2"
        assert "offsets timed out" in (project_root / f"{saved['name']}.md").read_text()
        # The same text again is a duplicate: refused by the write guard, nothing written.
        again = await client.call_tool(
            "save_memory", {"content": "The billing API pages with cursors; offsets timed out at 10k rows."}
        )
        assert again.is_error and "duplicate" in again.content[0].text
        assert not (project_root / f"{saved['name']}-3.md").exists()
        # A name replaces that memory; a list item and markdown marks do not reach the title.
        replaced = await client.call_tool(
            "save_memory", {"content": "Cursors only, since 2026-03.\n", "memory_name": saved["name"]}
        )
        assert replaced.structured_content["name"] == saved["name"]
        assert "Cursors only" in (project_root / f"{saved['name']}.md").read_text()
        listed_item = await client.call_tool("save_memory", {"content": "- **Never** force-push to `main`\n"})
        assert listed_item.structured_content["title"] == "Never force-push to main"
        assert listed_item.structured_content["name"] == "never-force-push-to-main"
        assert not (await client.call_tool("get_memory", {"memory_name": "never-force-push-to-main"})).is_error


async def test_core_results_are_structured(project_root: Path, tmp_path: Path, connect: Any) -> None:
    calls = {
        "assemble_context": {"query": "flaky tests"},
        "search_memory": {"query": "flaky tests"},
        "get_memory": {"memory_name": "ci/flaky-tests"},
        "save_memory": {"content": "Quarantined tests run nightly in the flaky lane (ci.yml)."},
        "invalidate_memory": {"memory_name": "incidents/flaky-tests", "reason": "fixed in ci.yml"},
    }
    assert set(calls) == set(PROFILES["core"])
    async with connect(project_root, tmp_path / "index", tools="core") as client:
        for tool, arguments in calls.items():
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content[0].text)
            data = result.structured_content
            assert isinstance(data, dict) and json.loads(result.content[0].text) == data, tool
        context = (await client.call_tool("assemble_context", {"query": "flaky tests"})).structured_content
        assert isinstance(context["blocks"], dict) and "<" not in json.dumps(context["blocks"])[:1]


def test_serve_tools_option_and_bad_names(project_root: Path, tmp_path: Path) -> None:
    """The CLI: --tools wins over [mcp] tools; an unknown name is bad usage (exit 2) before anything starts."""
    from mcp import Client, StdioServerParameters

    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    base = [sys.executable, "-m", "memrouter", "--root", str(project_root), "--index-dir", str(tmp_path / "index")]
    bad = subprocess.run([*base, "serve", "--tools", "core,bogus"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "'bogus' is neither a profile" in bad.stderr
    (project_root.parent.parent / "memrouter.toml").write_text('[mcp]\ntools = "core, nonsense"\n')
    configured = subprocess.run([*base, "serve"], capture_output=True, text=True, env=env, timeout=60)
    assert configured.returncode == 2 and "'nonsense'" in configured.stderr

    async def tools_of(*extra: str) -> list[str]:
        params = StdioServerParameters(command=base[0], args=[*base[1:], "serve", *extra], env=env)
        async with Client(params) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    import anyio

    (project_root.parent.parent / "memrouter.toml").write_text('[mcp]\ntools = "graph"\n')
    assert anyio.run(tools_of) == list(PROFILES["graph"])
    assert sorted(anyio.run(tools_of, "--tools", "serena,get_memory")) == sorted([*PROFILES["serena"], "get_memory"])
