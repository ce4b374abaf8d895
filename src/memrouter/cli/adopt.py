"""Commands that bring a repository to memrouter and knowledge in and out: init, import, export."""

from __future__ import annotations

from pathlib import Path

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state

__all__ = ["init"]


def _project(state: State) -> Path:
    """The repository ``init`` works on: the one ``--root`` is the memories folder of, else the one found from here."""
    from memrouter.config.settings import find_project
    from memrouter.core.errors import InvalidInput

    if state.root is not None:
        root = Path(state.root).expanduser().resolve()
        if root.name == "memories" and root.parent.name == ".serena":
            return root.parent.parent
        raise InvalidInput("init works on a repository: drop --root, or give a <repository>/.serena/memories folder")
    found = find_project(Path.cwd())
    if found is None:
        raise InvalidInput("no repository here: run init inside a git repository (git init first)")
    return found


@click.command()
@click.option(
    "--client", "clients", multiple=True, metavar="NAME",
    help="claude-code, cursor, codex, vscode or all (repeatable or comma-separated; default: all).",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print what would change, as a diff; write nothing.")
@FORMAT
@pass_state
@handle_errors
def init(state: State, clients: tuple[str, ...], dry_run: bool, fmt: str) -> None:
    """Connect this repository's agents to its memories: MCP configuration for each client, Claude Code's
    SessionStart hook, guidance in AGENTS.md / CLAUDE.md, the memories folder and a commented memrouter.toml.

    Existing files are merged, never replaced: other servers, keys and formatting stay, and an existing
    memrouter entry is kept. Running it again changes nothing.
    """
    from memrouter.ops.clients import CLIENTS, apply, launcher, plan_init

    names = [part.strip() for value in clients for part in value.split(",") if part.strip()]
    if not names or "all" in names:
        names = list(CLIENTS)
    project = _project(state)
    command = launcher()
    changes = plan_init(project, names, command)
    if not dry_run:
        apply(project, changes)
    data = {
        "project": str(project), "clients": names, "command": command, "dry_run": dry_run,
        "files": [change.to_dict() for change in changes],
    }  # fmt: skip
    if fmt == "json" and dry_run:
        data["diff"] = "".join(change.diff() for change in changes)

    def text() -> str:
        if dry_run:
            diff = "".join(change.diff() for change in changes)
            return diff.rstrip("\n") if diff else "nothing to change"
        lines = [f"{change.action:9} {change.relative}  ({change.what})" for change in changes]
        lines.append(f"memrouter starts as: {' '.join(command)} serve")
        return "\n".join(lines)

    emit(fmt, data, text)
