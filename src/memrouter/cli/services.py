"""Commands for the servers and the external services: serve, embed-serve, sync, validate, hook."""

from __future__ import annotations

import sys
from typing import Any

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --http.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port with --http.")
@click.option(
    "--token",
    envvar="MEMROUTER_TOKEN",
    default=None,
    help="Bearer token HTTP clients must send (required off loopback; env MEMROUTER_TOKEN).",
)
@click.option(
    "--global-root",
    envvar="MEMROUTER_GLOBAL_ROOT",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for Serena-style global/<name> memories (default: refused).",
)
@click.option("--agent", default=None, help="The agent id the team tools act as (pinned for every client).")
@click.option(
    "--projects",
    "projects_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Serve the repositories this TOML file lists over HTTP, each at /mcp/<key>, to the tokens it names.",
)
@click.option(
    "--tools",
    default=None,
    metavar="LIST",
    help="The tools offered, comma-separated profiles or tool names: core (default), serena, team, git, review, "
    "graph, all. Default: [mcp] tools in memrouter.toml.",
)
@pass_state
@handle_errors
def serve(
    state: State, use_http: bool, host: str, port: int, token: str | None, global_root: str | None,
    agent: str | None, projects_file: str | None, tools: str | None,
) -> None:  # fmt: skip
    """Run the MCP server over stdio (or streamable HTTP with --http; many repositories with --projects)."""
    from memrouter.mcp.serve import serve as run_server

    if tools is not None:
        from memrouter.mcp.profiles import selected_tools

        selected_tools(tools)  # an unknown name is bad usage, before anything starts

    if projects_file is not None:
        if token is not None or state.root is not None or state.index_dir is not None:
            raise click.UsageError("with --projects, the repositories and tokens come from the file: drop "
                                   "--token/MEMROUTER_TOKEN, --root and --index-dir")  # fmt: skip
        from memrouter.mcp.serve import serve_projects

        def announce_projects() -> None:
            click.echo(f"memrouter: serving MCP at http://{host}:{port}/mcp/<project>", err=True)

        serve_projects(projects_file, host=host, port=port, global_root=global_root, on_ready=announce_projects,
                       agent=agent, tools=tools)  # fmt: skip
        return

    def announce() -> None:
        click.echo(f"memrouter: serving MCP at http://{host}:{port}/mcp", err=True)

    run_server(
        state.root, state.index_dir, http=use_http, host=host, port=port, token=token, global_root=global_root,
        on_ready=announce, agent=agent, tools=tools,
    )  # fmt: skip


@click.command()
@click.option("--all", "scope", flag_value="all", default=True, help="Every memory and mapping (default).")
@click.option("--staged", "scope", flag_value="staged", help="Only the memory changes staged in git.")
@click.option("--from-queue", "scope", flag_value="queue", help="Drain the queue the pre-commit hook filled.")
@click.option("--dry-run", is_flag=True, help="Say what would be sent; change nothing.")
@click.option("--force", is_flag=True, help="Re-send memories whose hash did not change.")
@click.option("--backend", default=None, help="Only this backend (default: every configured one).")
@FORMAT
@pass_state
@handle_errors
def sync(state: State, scope: str, dry_run: bool, force: bool, backend: str | None, fmt: str) -> None:
    """Sync the memories one way to the external backends, by content hash."""
    from memrouter.core.errors import BackendError, BackendUnavailable

    reports = state.router().sync(backend=backend, changes=scope, dry_run=dry_run, force=force)
    data = {"changes": scope, "dry_run": dry_run, "backends": [r.to_dict() for r in reports]}

    def text() -> str:
        lines = []
        for r in reports:
            verb = "would sync" if dry_run else "synced"
            lines.append(
                f"{r.backend}: {verb} {len(r.created)} created, {len(r.updated)} updated, {r.skipped} unchanged, "
                f"{len(r.obsoleted)} obsoleted, {len(r.renamed)} renamed ({r.duration_ms:.0f} ms)"
            )
            lines += [f"  failed: {name}: {why}" for name, why in sorted(r.failed.items())]
        return "\n".join(lines)

    emit(fmt, data, text)
    errors = [r for r in reports if r.error]
    if errors:
        raise BackendUnavailable("; ".join(str(r.error) for r in errors))
    if any(r.failed for r in reports):
        raise BackendError(f"{sum(len(r.failed) for r in reports)} memory(ies) could not be synced")


@click.command()
@click.option("--backend", default=None, help="Only this backend (default: every configured one).")
@click.option(
    "--remote",
    "check_remote",
    is_flag=True,
    help="Also check every mapped remote memory on the service (listed, or fetched one by one; needs it).",
)
@FORMAT
@pass_state
@handle_errors
def validate(state: State, backend: str | None, check_remote: bool, fmt: str) -> None:
    """Report how fresh the backends' copies are: in_sync, stale, missing, orphaned."""
    reports = state.router().validate(backend=backend, check_remote=check_remote)
    data: Any = reports[0].to_dict() if len(reports) == 1 else {"backends": [r.to_dict() for r in reports]}

    def text() -> str:
        lines = []
        for r in reports:
            lines.append(
                f"{r.backend}: {r.total} memories: {r.in_sync} in sync, {r.stale} stale, "
                f"{r.missing} missing, {r.orphaned} orphaned ({r.duration_ms} ms)"
            )
            lines += [f"  {d.state}: {d.name} ({d.reason})" for d in r.details[:50]]
            if len(r.details) > 50:
                lines.append(f"  ... {len(r.details) - 50} more (use --format json)")
        return "\n".join(lines)

    emit(fmt, data, text)


@click.command()
@click.argument("action", type=click.Choice(["install", "uninstall"]), required=False)
@click.option(
    "--only",
    type=click.Choice(["pre-commit", "merge-driver"]),
    default=None,
    help="Install or remove only the pre-commit hook, or only the merge driver for memory files (default: both).",
)
@click.option(
    "--merge-driver",
    "merge_files",
    nargs=4,
    type=click.Path(dir_okay=False),
    default=None,
    metavar="BASE OURS THEIRS PATH",
    help="Run as git's merge driver (%O %A %B %P): merge a memory file, write the result over OURS; "
    "exit 1 when conflicts are left.",
)
@FORMAT
@pass_state
@handle_errors
def hook(state: State, action: str | None, only: str | None, merge_files: tuple[str, ...] | None, fmt: str) -> None:
    """Install or remove memrouter's git hooks: the pre-commit hook that queues memory changes for sync, and the
    merge driver that merges memory files field by field (`.gitattributes` and the repository's git config)."""
    from pathlib import Path

    if merge_files:
        if action is not None or only is not None:
            raise click.UsageError("--merge-driver takes no ACTION and no --only")
        from memrouter.ops.memory_merge import run_merge_driver

        base, ours, theirs, path = merge_files
        outcome = run_merge_driver(Path(base), Path(ours), Path(theirs))
        if outcome.plain_reason is not None:
            click.echo(f"memrouter: {path}: merged as plain text ({outcome.plain_reason})", err=True)
        if outcome.field_conflicts:
            click.echo(f"memrouter: {path}: both sides changed {', '.join(outcome.field_conflicts)}", err=True)
        if not outcome.clean:
            sys.exit(1)
        return
    if action is None:
        raise click.UsageError("say install or uninstall (or run as git's merge driver with --merge-driver)")

    from memrouter.config.settings import Config
    from memrouter.external.sync.hook import install_hook, uninstall_hook
    from memrouter.external.sync.queue import QUEUE_FILE
    from memrouter.ops.merge_setup import install_merge_driver, uninstall_merge_driver

    config = Config.load(root=state.root, index_dir=state.index_dir)
    root = Path(config.root)
    data: dict[str, Any] = {}
    lines: list[str] = []
    if only != "merge-driver":
        result = (
            install_hook(root, Path(config.index_dir) / QUEUE_FILE) if action == "install" else uninstall_hook(root)
        )
        data.update(result.to_dict())
        lines.append(f"{result.action}: {result.hook}")
    if only != "pre-commit":
        setup = install_merge_driver(root) if action == "install" else uninstall_merge_driver(root)
        data["merge_driver"] = setup.to_dict()
        lines.append(f"merge driver {setup.action}: {setup.attributes} ({setup.pattern})")
    emit(fmt, data, lambda: "\n".join(lines))


@click.command(name="embed-serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(1, 65535), default=8090, show_default=True)
@click.option(
    "--token",
    envvar="MEMROUTER_TOKEN",
    default=None,
    help="Bearer token clients must send (required off loopback; env MEMROUTER_TOKEN).",
)
@click.option("--embedder", "embedder_name", default="minilm", show_default=True, help="Registered embedder name.")
@click.option(
    "--dimension", type=click.IntRange(1, 65536), default=None, help="Vector size, for embedders that take one (hash)."
)
@handle_errors
def embed_serve(host: str, port: int, token: str | None, embedder_name: str, dimension: int | None) -> None:
    """Serve an OpenAI-compatible POST /v1/embeddings from the offline embedder."""
    from memrouter.http.embeddings import serve_embeddings

    options = {} if dimension is None else {"dimension": dimension}

    def announce() -> None:
        click.echo(f"memrouter: serving embeddings at http://{host}:{port}/v1/embeddings", err=True)

    serve_embeddings(host, port, token=token, embedder_name=embedder_name, embedder_options=options, on_ready=announce)
