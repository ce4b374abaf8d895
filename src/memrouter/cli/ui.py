"""``memrouter ui``: the local web UI (``memrouter.ui``), loaded only by this command."""

from __future__ import annotations

import click

from memrouter.cli.common import State, handle_errors, pass_state


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (off loopback needs --token).")
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True, help="Port (0: any free port).")
@click.option(
    "--token",
    envvar="MEMROUTER_TOKEN",
    default=None,
    help="Token the browser must present (required off loopback; env MEMROUTER_TOKEN).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the UI in the default web browser.")
@click.option(
    "--projects",
    "projects_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Several repositories, each under /p/<key>, with the tokens of this file (as serve --projects).",
)
@pass_state
@handle_errors
def ui(state: State, host: str, port: int, token: str | None, open_browser: bool, projects_file: str | None) -> None:
    """Browse, search and review the memories in a local web UI."""
    from memrouter.core.errors import ConfigError
    from memrouter.ui.server import serve_ui, serve_ui_projects

    def announce(address: str) -> None:
        click.echo(f"memrouter: UI at {address}", err=True)
        if open_browser:
            import webbrowser

            webbrowser.open(address)

    if projects_file is not None:
        if token is not None or state.root is not None or state.index_dir is not None:
            raise ConfigError(
                "--projects takes its tokens and repositories from the file: no --token, --root or --index-dir"
            )
        serve_ui_projects(projects_file, host=host, port=port, on_ready=announce)
        return
    serve_ui(state.root, state.index_dir, host=host, port=port, token=token, on_ready=announce)
