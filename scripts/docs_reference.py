"""The generated parts of docs/cli.md and docs/mcp.md, written by cog from the code itself.

``make docs-refresh`` runs ``cog -r -I scripts docs/cli.md docs/mcp.md``; each
page holds a ``[[[cog ... ]]]`` block that calls ``cli_reference()`` or
``mcp_reference()`` here, and ``tests/test_docs.py`` fails when what is
written there differs from what these functions return now.

The CLI reference is every command's ``--help`` as click renders it, at a
fixed width. The MCP reference comes from the server's own ``tools/list``,
built over an empty memories folder the way ``memrouter serve`` builds it:
the size of the list for each tool profile (characters of JSON as sent, and
o200k tokens), then every tool by profile.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import click
from click.testing import CliRunner
from mcp_types import ListToolsResult

from memrouter.config.settings import Config
from memrouter.router import Router

# isort: split
# Where the command group and the MCP server's builder live: the one place this module names them.
from memrouter.cli import main as CLI
from memrouter.mcp import server as mcp_server
from memrouter.mcp.profiles import DEFAULT_PROFILE, PROFILE_NAMES, PROFILES
from memrouter.mcp.service import MemoryService
from memrouter.ops.context.tokens import count_tokens

# Wide enough for click's option columns, narrow enough for a code block on the site.
WIDTH = 88
# Section headings of the MCP reference, one per profile, in the order of ``PROFILES``.
PROFILE_TITLES = {
    "core": "`core`: using memories (the default)",
    "serena": "`serena`: Serena's memory tools",
    "team": "`team`: the team channel and the scratchpad",
    "git": "`git`: the repository and the task",
    "review": "`review`: review, the janitor, sprints and status",
    "graph": "`graph`: the knowledge graph",
}


def commands(group: click.Group = CLI, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``group`` with its words after ``memrouter``, the group itself first, depth first."""
    yield path, group
    for name in sorted(group.commands):
        command = group.commands[name]
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def command_help(path: tuple[str, ...]) -> str:
    """What ``memrouter <path> --help`` prints, at ``WIDTH`` columns, whatever the terminal."""
    done = CliRunner().invoke(
        CLI, [*path, "--help"], prog_name="memrouter", terminal_width=WIDTH, max_content_width=WIDTH
    )
    if done.exit_code != 0:
        raise RuntimeError(f"memrouter {' '.join(path)} --help failed: {done.output}")
    return done.output.rstrip() + "\n"


def cli_reference() -> str:
    """Markdown: one section per command, each holding its help."""
    parts = []
    for path, _ in commands():
        title = " ".join(("memrouter", *path))
        parts.append(f"### {title}\n\n```text\n{command_help(path)}```\n")
    return "\n".join(parts)


def listed_tools(tools: str = "all") -> list[Any]:
    """The server's ``tools/list`` answer with ``tools`` (profiles, as ``serve --tools`` takes them): the
    tools of a server over a new, empty memories folder."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "memories"
        root.mkdir()
        config = Config.load(root=root, index_dir=Path(folder) / "index", env={})
        with Router(config, watch=False) as router:
            server = mcp_server.create_server(MemoryService(router), tools=tools)
            listed: list[Any] = anyio.run(server.list_tools)
    return listed


def wire_text(tools: list[Any]) -> str:
    """The ``tools/list`` result as the server sends it (compact JSON, no null fields)."""
    result = ListToolsResult(tools=tools).model_dump(by_alias=True, mode="json", exclude_none=True)
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def wire_size(tools: list[Any]) -> int:
    """Characters of the ``tools/list`` result as the server sends it."""
    return len(wire_text(tools))


def profile_sizes() -> list[tuple[str, int, int, int]]:
    """Each profile's ``(name, tools, characters, o200k tokens)`` of its ``tools/list`` result, ``all`` last."""
    sizes = []
    for name in PROFILE_NAMES:
        tools = listed_tools(name)
        text = wire_text(tools)
        sizes.append((name, len(tools), len(text), count_tokens(text)))
    return sizes


def schema_type(spec: dict[str, Any]) -> str:
    """A parameter's JSON schema in a few words: ``string``, ``array of string``, ``"a"`` or ``"b"``."""
    if "enum" in spec:
        return " or ".join(f"`{json.dumps(value)}`" for value in spec["enum"])
    kind = spec.get("type")
    if kind == "array":
        return f"array of {schema_type(spec.get('items', {}))}"
    if "anyOf" in spec:
        return " or ".join(schema_type(option) for option in spec["anyOf"])
    return str(kind) if kind else "any JSON"


def tool_section(tool: Any) -> str:
    """One tool: its description, whether it writes (its annotations), and a table of its parameters."""
    hints = tool.annotations
    if hints is not None and hints.read_only_hint:
        effect = "Read-only."
    elif hints is not None and hints.destructive_hint:
        effect = "Writes; destructive (removes or replaces what exists)."
    else:
        effect = "Writes."
    lines = [f"#### `{tool.name}`", "", tool.description or "", "", effect, ""]
    schema = tool.input_schema
    required = set(schema.get("required", ()))
    properties = schema.get("properties", {})
    if properties:
        lines += ["| parameter | type | default |", "|---|---|---|"]
        for name, spec in properties.items():
            default = "required" if name in required else "optional"
            if "default" in spec:
                default = f"`{json.dumps(spec['default'])}`"
            lines.append(f"| `{name}` | {schema_type(spec)} | {default} |")
    else:
        lines.append("No parameters.")
    return "\n".join(lines) + "\n"


def size_table() -> str:
    """Markdown: each profile's tools and the size of its ``tools/list`` result."""
    rows = ["| `--tools` | tools | characters | o200k tokens |", "|---|---:|---:|---:|"]
    for name, count, chars, tokens in profile_sizes():
        label = f"`{name}` (default)" if name == DEFAULT_PROFILE else f"`{name}`"
        rows.append(f"| {label} | {count} | {chars:,} | {tokens:,} |")
    return "\n".join(rows) + "\n"


def mcp_reference() -> str:
    """Markdown: the size of the tool list per profile, then every tool by profile, as ``--tools all`` lists it."""
    tools = listed_tools("all")
    by_name = {tool.name: tool for tool in tools}
    listed = [tool.name for tool in tools]
    parts = [
        "What a client holds in its context before the first call: the `tools/list` result for each profile, "
        "in characters of JSON as the server sends it and in tokens of the o200k encoding. Profiles combine "
        "(`--tools core,git`), and a tool may be named on its own (`--tools core,edit_memory`). Where two "
        "offered tools could be taken for one another, their descriptions say which to use when: the tools "
        "below are described as `--tools all` lists them.\n",
        size_table(),
    ]
    for name in PROFILE_NAMES:
        if name == "all":
            continue
        parts.append(f"### {PROFILE_TITLES[name]}\n")
        parts += [tool_section(by_name[tool]) for tool in listed if tool in PROFILES[name]]
    return "\n".join(parts)
