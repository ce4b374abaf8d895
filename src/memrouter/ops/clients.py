"""``memrouter init``: connect the agents a team uses to the project's memories, each in its own format.

For each client, the project-level file that client reads, with an entry that
starts ``memrouter serve`` from where memrouter is installed:

- Claude Code: ``.mcp.json`` (``mcpServers``), and a SessionStart hook in
  ``.claude/settings.json`` that prints ``memrouter context`` into the session;
  guidance in ``CLAUDE.md``.
- Cursor: ``.cursor/mcp.json`` (``mcpServers``; ``${workspaceFolder}`` names the project).
- Codex: ``.codex/config.toml`` (``[mcp_servers.memrouter]``, written with tomlkit).
- VS Code: ``.vscode/mcp.json`` (``servers``, ``"type": "stdio"``).

Cursor, Codex and VS Code read the guidance in ``AGENTS.md``. Every change is a
merge: other servers, keys, comments and formatting stay (JSON members and
TOML tables are edited in place, ``memrouter.ops.textedit``); an entry named
``memrouter`` that is already there is kept as it is. Running ``init`` again
changes nothing. ``plan_init`` computes the changes; ``apply`` writes them,
each file atomically.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrouter.config.settings import CONFIG_FILE, MEMORIES
from memrouter.core.errors import InvalidInput
from memrouter.ops.textedit import json_member, marked_section, strip_json_comments

__all__ = [
    "CLIENTS",
    "FileChange",
    "GUIDE",
    "apply",
    "launcher",
    "plan_init",
    "server_entry",
    "write_files",
]

CLIENTS = ("claude-code", "cursor", "codex", "vscode")
SERVER = "memrouter"
HOOK_TOKENS = 2000  # the SessionStart hook's context budget (o200k tokens)
WORKSPACE = "${workspaceFolder}"  # Cursor and VS Code put the project folder here

# The guidance agents read in AGENTS.md / CLAUDE.md, between memrouter's markers.
GUIDE = """\
## Project memory (memrouter)

This repository keeps what its agents and people learned as markdown memories in
`.serena/memories/`, served by the `memrouter` MCP server (the same files answer
`memrouter search "..."` on the command line).

- Search the memories before you start a task, and before you decide anything about
  conventions, architecture, past incidents or why something is the way it is.
- Save a memory when you learn something a later session needs: a decision and its
  reason, a convention, a pitfall, a fix that took long to find. Give its source (an
  issue, a commit, a file) and keep it to one topic.
- Never save secrets, and nothing the code or the git history already says.
"""

CONFIG_TEMPLATE = """\
# memrouter's settings for this repository; every key and its default are in
# memrouter's documentation (Configuration). Uncomment what you change.
#
# [search]
# mode = "hybrid"          # hybrid, lexical or semantic
# limit = 10
#
# Files of the repository indexed in place as read-only memories, split by heading:
# [sources]
# globs = ["CLAUDE.md", "AGENTS.md", ".cursor/rules/**", "docs/adr/**"]
"""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file ``init`` creates or changes: its text before (None: new) and after."""

    path: Path
    relative: str
    before: str | None
    after: str
    what: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def action(self) -> str:
        return "unchanged" if not self.changed else ("created" if self.before is None else "updated")

    def diff(self) -> str:
        """The change as a unified diff (empty when unchanged)."""
        if not self.changed:
            return ""
        old = "/dev/null" if self.before is None else f"a/{self.relative}"
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True), old,
            f"b/{self.relative}",
        )  # fmt: skip
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.relative, "action": self.action, "what": self.what}


def launcher() -> list[str]:
    """How to start this installation of memrouter: ``memrouter`` when the one on PATH is this one,
    else the absolute path of its script (a venv that is not activated), else ``python -m memrouter``."""
    scripts = Path(sysconfig.get_path("scripts"))
    script = scripts / ("memrouter.exe" if os.name == "nt" else "memrouter")
    if script.is_file():
        on_path = shutil.which("memrouter")
        if on_path is not None and Path(on_path).resolve() == script.resolve():
            return ["memrouter"]
        return [str(script)]
    return [sys.executable, "-m", "memrouter"]


def server_entry(client: str, command: Sequence[str]) -> tuple[str, list[str]]:
    """The (command, args) a client starts: ``memrouter [--root <project>/.serena/memories] serve``.

    Cursor and VS Code substitute ``${workspaceFolder}``; Claude Code and Codex start servers in the
    project, where ``memrouter`` finds the memories by itself.
    """
    args = [*command[1:]]
    if client in ("cursor", "vscode"):
        args += ["--root", f"{WORKSPACE}/{MEMORIES.as_posix()}"]
    return command[0], [*args, "serve"]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text; fix it or remove it and run init again") from exc


class _Plan:
    """The files of one ``init``, each read once and changed in memory."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.files: dict[str, tuple[str | None, str, list[str]]] = {}

    def text(self, relative: str) -> str | None:
        if relative not in self.files:
            before = _read(self.project / relative)
            self.files[relative] = (before, before or "", [])
        return self.files[relative][1] or None

    def set(self, relative: str, after: str, what: str) -> None:
        before, current, notes = self.files[relative]
        if after != current:
            notes.append(what)
        self.files[relative] = (before, after, notes)

    def changes(self) -> list[FileChange]:
        return [
            FileChange(self.project / relative, relative, before, after, "; ".join(notes) or "already there")
            for relative, (before, after, notes) in self.files.items()
        ]


def _json(plan: _Plan, relative: str, path: tuple[str, ...], value: Any, what: str) -> None:
    try:
        after = json_member(plan.text(relative), path, value)
    except InvalidInput as exc:
        raise InvalidInput(f"{relative}: {exc}; add the entry by hand or fix the file") from exc
    plan.set(relative, after, what)


def _toml_server(plan: _Plan, relative: str, command: str, args: list[str]) -> None:
    import tomlkit  # only init writes TOML
    from tomlkit.exceptions import TOMLKitError

    text = plan.text(relative) or ""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InvalidInput(f"{relative}: not TOML memrouter can edit ({exc}); fix the file") from exc
    servers = document.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise InvalidInput(f"{relative}: mcp_servers is not a table; fix the file")
    if SERVER not in servers:
        entry = tomlkit.table()
        entry["command"] = command
        entry["args"] = args
        servers[SERVER] = entry
    plan.set(relative, tomlkit.dumps(document), "the memrouter server")


def _claude_hook(plan: _Plan, command: Sequence[str]) -> None:
    relative = ".claude/settings.json"
    hook = f"{shlex.join(command)} context --max-tokens {HOOK_TOKENS}"
    text = plan.text(relative)
    settings: Any = {}
    if text:
        try:
            settings = json.loads(strip_json_comments(text))
        except ValueError as exc:
            raise InvalidInput(f"{relative}: not JSON memrouter can edit ({exc}); fix the file") from exc
    entries = settings.get("hooks", {}).get("SessionStart", []) if isinstance(settings, dict) else []
    commands = [
        h.get("command", "") for e in entries if isinstance(e, dict) for h in e.get("hooks", []) if isinstance(h, dict)
    ]
    if any(" context" in c and "memrouter" in c for c in commands if isinstance(c, str)):
        plan.set(relative, text or "", "the SessionStart hook")
        return
    entry = {"hooks": [{"type": "command", "command": hook}]}
    if not entries:
        _json(plan, relative, ("hooks", "SessionStart"), [entry], "the SessionStart hook (memrouter context)")
        return
    # Append to the existing SessionStart list: the list is rewritten, the rest of the file is not.
    _json_replace(plan, relative, ("hooks", "SessionStart"), [*entries, entry])


def _json_replace(plan: _Plan, relative: str, path: tuple[str, ...], value: Any) -> None:
    plan.set(relative, json_member(plan.text(relative), path, value, replace=True), "the SessionStart hook")


def plan_init(project: Path, clients: Iterable[str], command: Sequence[str]) -> list[FileChange]:
    """What ``init`` writes for ``clients`` in ``project``, with ``command`` starting memrouter (``launcher()``)."""
    chosen = list(dict.fromkeys(clients))
    unknown = [c for c in chosen if c not in CLIENTS]
    if unknown or not chosen:
        raise InvalidInput(f"unknown client {', '.join(unknown) or '(none)'}: choose from {', '.join(CLIENTS)}")
    plan = _Plan(project)
    if plan.text(CONFIG_FILE) is None:
        plan.set(CONFIG_FILE, CONFIG_TEMPLATE, "a commented configuration")
    for client in chosen:
        exe, args = server_entry(client, command)
        if client == "claude-code":
            _json(plan, ".mcp.json", ("mcpServers", SERVER), {"type": "stdio", "command": exe, "args": args},
                  "the memrouter server")  # fmt: skip
            _claude_hook(plan, command)
            plan.set("CLAUDE.md", marked_section(plan.text("CLAUDE.md"), "guide", GUIDE), "when to search and save")
        elif client == "cursor":
            _json(plan, ".cursor/mcp.json", ("mcpServers", SERVER), {"command": exe, "args": args},
                  "the memrouter server")  # fmt: skip
        elif client == "codex":
            _toml_server(plan, ".codex/config.toml", exe, args)
        else:
            _json(plan, ".vscode/mcp.json", ("servers", SERVER), {"type": "stdio", "command": exe, "args": args},
                  "the memrouter server")  # fmt: skip
        if client != "claude-code":
            plan.set("AGENTS.md", marked_section(plan.text("AGENTS.md"), "guide", GUIDE), "when to search and save")
    return plan.changes()


def apply(project: Path, changes: Iterable[FileChange]) -> None:
    """Create the memories folder and write each changed file (``write_files``)."""
    (project / MEMORIES).mkdir(parents=True, exist_ok=True)
    write_files(changes)


def write_files(changes: Iterable[FileChange]) -> None:
    """Write each changed file atomically (a temporary file beside it, flushed, then a rename), keeping its mode."""
    for change in changes:
        if not change.changed:
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        mode = change.path.stat().st_mode & 0o777 if change.path.exists() else 0o644
        fd, temp = tempfile.mkstemp(prefix=f".{change.path.name}.", suffix=".tmp", dir=change.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(change.after)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, mode)
            os.replace(temp, change.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
