"""Commands that bring a repository to memrouter and knowledge in and out: init, import, export."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memrouter.cli.common import AGENT, FORMAT, State, emit, handle_errors, pass_state

__all__ = ["export", "import_", "init"]


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


IMPORT_KIND_HELP = (
    "claude-code (auto-memory), codex, basic-memory, obsidian, mem0 (a JSON export), serena (global memories), "
    "file, archive (a memrouter export); default: from PATH."
)


@click.command(name="import")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--kind", default=None, metavar="KIND", help=IMPORT_KIND_HELP)
@click.option("--prefix", default=None, help="Folder for the new memories (default imported/<kind>/, or imported/).")
@click.option("--dry-run", is_flag=True, help="List what would be written; write nothing.")
@AGENT
@FORMAT
@pass_state
@handle_errors
def import_(
    state: State, path: Path | None, kind: str | None, prefix: str | None, dry_run: bool, agent: str | None, fmt: str
) -> None:
    """Import knowledge kept elsewhere as memories, split by heading, each through the write guard.

    Without PATH, --kind claude-code, codex or serena reads from where that tool keeps its memories.
    Re-importing updates what changed and never duplicates. Exit 1 when something was refused.
    """
    from memrouter.core.errors import InvalidInput
    from memrouter.ops.audit import acting_as
    from memrouter.ops.importing import IMPORT_KINDS, default_path, run_import

    if kind is not None and kind not in IMPORT_KINDS:
        raise InvalidInput(f"unknown --kind {kind!r}: choose from {', '.join(IMPORT_KINDS)}")
    router = state.router()
    if path is None:
        if kind is None:
            raise InvalidInput("give a PATH to import, or --kind claude-code, codex or serena")
        path = default_path(kind, router.config.project_dir)
        if not path.exists():
            raise InvalidInput(f"nothing to import: {path} does not exist")
    actor = state.actor(agent)
    with acting_as(actor):
        report = run_import(router.workspace, path, kind, prefix=prefix, dry_run=dry_run, actor=actor)
    counts = report.counts()

    def text() -> str:
        verb = "would be " if dry_run else ""
        lines = [
            f"{item.action:9} {item.name}" + (f"  ({item.reason})" if item.reason else "")
            for item in report.items if item.action != "unchanged" or dry_run
        ]  # fmt: skip
        lines.append(
            f"{report.kind} {report.path}: {verb}{counts['created']} created, {counts['updated']} updated, "
            f"{counts['unchanged']} unchanged, {counts['refused']} refused, {counts['conflict']} conflicts"
        )
        return "\n".join(lines)

    emit(fmt, report.to_dict(), text)
    if counts["refused"] or counts["conflict"]:
        sys.exit(1)


@click.command()
@click.argument("output", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--digest", is_flag=True, help="Write a digest into AGENTS.md (or --into) instead of an archive.")
@click.option("--into", default=None, type=click.Path(dir_okay=False), help="The digest's file (default: AGENTS.md).")
@click.option(
    "--max-tokens", type=click.IntRange(100, 100_000), default=1500, show_default=True, help="The digest's budget."
)
@click.option("--dry-run", is_flag=True, help="With --digest: print the diff; write nothing.")
@pass_state
@handle_errors
def export(state: State, output: str | None, digest: bool, into: str | None, max_tokens: int, dry_run: bool) -> None:
    """Export the memories: a lossless JSONL archive to OUTPUT (default: standard output) that `memrouter import`
    restores with the same hashes, or with --digest a budgeted digest between markers in AGENTS.md or CLAUDE.md."""
    from memrouter.core.errors import InvalidInput
    from memrouter.ops.clients import FileChange, write_files
    from memrouter.ops.exporting import archive_lines, write_digest
    from memrouter.ops.exporting import digest as make_digest

    router = state.router()
    if not digest:
        if into is not None or dry_run:
            raise InvalidInput("--into and --dry-run go with --digest")
        lines = archive_lines(router.workspace)
        if output in (None, "-"):
            for line in lines:
                click.echo(line)
            return
        target = Path(output)
        write_files([FileChange(target, str(target), None, "".join(f"{line}\n" for line in lines), "the archive")])
        click.echo(f"wrote {target}", err=True)
        return
    if output is not None:
        raise InvalidInput("with --digest, name the file with --into")
    project = router.config.project_dir or router.config.root
    target = Path(into) if into is not None else project / "AGENTS.md"
    text, shown, total = make_digest(router.workspace, max_tokens)
    before, after = write_digest(target, text)
    change = FileChange(target, target.name, before, after, f"the digest ({shown} of {total} memories)")
    if dry_run:
        click.echo(change.diff().rstrip("\n") or "nothing to change")
        return
    write_files([change])
    click.echo(f"{change.action} {target}: {change.what}")
