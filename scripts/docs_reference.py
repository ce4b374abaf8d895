"""The generated parts of docs/cli.md and docs/mcp.md, written by cog from the code itself.

``make docs-refresh`` runs ``cog -r -I scripts docs/cli.md docs/mcp.md``; each
page holds a ``[[[cog ... ]]]`` block that calls ``cli_reference()`` or
``mcp_reference()`` here, and ``tests/test_docs.py`` fails when what is
written there differs from what these functions return now.

The CLI reference is every command's ``--help`` as click renders it, at a
fixed width. The MCP reference comes from the server's own ``tools/list``,
built over an empty memories folder the way ``memrouter serve`` builds it.
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
from memrouter.mcp.service import MemoryService

# Wide enough for click's option columns, narrow enough for a code block on the site.
WIDTH = 88
# Section headings of the MCP reference, in order, with the server's own lists of tool names.
TOOL_FAMILIES = (
    ("Memories", mcp_server.MEMROUTER_TOOLS),
    ("Serena's memory tools", mcp_server.SERENA_TOOLS),
    ("The repository and the task", mcp_server.SESSION_TOOLS),
    ("The team channel", mcp_server.TEAM_TOOLS),
    ("The knowledge graph", mcp_server.GRAPH_TOOLS),
    ("The scratchpad", mcp_server.SCRATCH_TOOLS),
    ("Review and the janitor", mcp_server.REVIEW_TOOLS),
)


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


def listed_tools() -> list[Any]:
    """The server's ``tools/list`` answer: the tools of a server over a new, empty memories folder."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "memories"
        root.mkdir()
        config = Config.load(root=root, index_dir=Path(folder) / "index", env={})
        with Router(config, watch=False) as router:
            server = mcp_server.create_server(MemoryService(router))
            tools: list[Any] = anyio.run(server.list_tools)
    return tools


def wire_size(tools: list[Any]) -> int:
    """Characters of the ``tools/list`` result as the server sends it (compact JSON, no null fields)."""
    result = ListToolsResult(tools=tools).model_dump(by_alias=True, mode="json", exclude_none=True)
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")))


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


def mcp_reference() -> str:
    """Markdown: the size of the tool list, then every tool by family, in the order the server lists them."""
    tools = listed_tools()
    listed = [tool.name for tool in tools]
    families = [(title, [name for name in listed if name in names]) for title, names in TOOL_FAMILIES]
    known = {name for _, names in families for name in names}
    families.append(("Other tools", [name for name in listed if name not in known]))
    by_name = {tool.name: tool for tool in tools}
    parts = [
        f"The server lists {len(tools)} tools. Its `tools/list` result is {wire_size(tools):,} characters of JSON: "
        "what a client holds in its context before the first call.\n"
    ]
    for title, names in families:
        if names:
            parts.append(f"### {title}\n")
            parts += [tool_section(by_name[name]) for name in names]
    return "\n".join(parts)
