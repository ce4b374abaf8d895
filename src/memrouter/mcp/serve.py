"""``memrouter serve``: the MCP server over stdio or streamable HTTP.

The server holds one Router for its whole life (watching the files, so hand
edits are seen), answers memrouter's tools, Serena's memory tools, session
tools and ``memory://`` resources (see ``memrouter.mcp.server``). The MCP SDK
is imported only here, so other commands start fast; the embedding model, if
any, loads on the first search that needs it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memrouter.core.errors import MemoryRouterError
from memrouter.mcp.activity import Activity

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer

    from memrouter.config.settings import Config
    from memrouter.http.serve import ConnectionLimits
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.mcp.multi import OpenedProject
    from memrouter.mcp.team_service import TeamService
    from memrouter.router import Router
    from memrouter.team.bridge import BridgeRunner

__all__ = ["serve", "serve_projects", "DEFAULT_HOST", "DEFAULT_PORT"]

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def serve(
    root: str | Path | None = None,
    index_dir: str | Path | None = None,
    *,
    http: bool = False,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    global_root: str | Path | None = None,
    connection_limits: ConnectionLimits | None = None,
    on_ready: Callable[[], None] | None = None,
    agent: str | None = None,
    tools: str | None = None,
) -> None:
    """Run the MCP server until stdin closes (stdio) or the process is stopped (HTTP).

    Binding HTTP to anything but a loopback address requires ``token``;
    with a token, requests must send ``Authorization: Bearer <token>``.
    Over HTTP the address is bound first (ConfigError if it cannot be) and
    ``on_ready`` is called once requests are answered; ``connection_limits``
    bounds slow clients (see ``memrouter.http.serve``). ``agent`` pins the
    agent id the team tools act as. ``tools`` (profile and tool names, comma-separated) chooses the
    tools offered instead of the project's ``[mcp] tools``; an unknown name stops it before it serves.
    """
    from memrouter.http.serve import require_token_off_loopback
    from memrouter.mcp.http import run_http

    require_token_off_loopback(host if http else "localhost", token)
    listeners: list[socket.socket] = []
    if http:
        from memrouter.http.serve import bind_listeners

        listeners = bind_listeners(host, port)
    try:
        from memrouter.config.settings import Config

        server, close = _open_server(Config.load(root=root, index_dir=index_dir), agent, global_root, tools=tools)
        try:
            if http:
                run_http(server, listeners, host, token, limits=connection_limits, on_ready=on_ready)
            else:
                from memrouter.mcp.wire import run_stdio

                run_stdio(server)
        finally:
            close()
    finally:
        for listener in listeners:
            listener.close()


def serve_projects(
    projects_file: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    global_root: str | Path | None = None,
    connection_limits: ConnectionLimits | None = None,
    on_ready: Callable[[], None] | None = None,
    agent: str | None = None,
    tools: str | None = None,
) -> None:
    """Serve every repository of ``projects_file`` over streamable HTTP, each at ``/mcp/<key>``, until stopped.

    The file is read and checked (``memrouter.config.projects``) before the
    address is bound; each project opens on its first allowed request. ``tools``
    chooses every project's tools; without it each project's ``[mcp] tools`` does.
    """
    from memrouter.config.projects import load_projects
    from memrouter.http.serve import HttpServer, bind_listeners
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.mcp.multi import ProjectsApp
    from memrouter.mcp.profiles import selected_tools

    served = load_projects(projects_file)
    for key in served.projects:  # a repository's bad memrouter.toml stops the server before it listens
        selected_tools(served.config(key).mcp_tools if tools is None else tools)
    listeners = bind_listeners(host, port)
    databases = SharedDatabases()  # one pool per database URL, whatever the number of projects

    def open_project(key: str) -> OpenedProject:
        from memrouter.mcp.multi import OpenedProject

        server, close = _open_server(served.config(key), agent, global_root, databases, tools=tools)
        try:
            app = server.streamable_http_app(streamable_http_path=f"/mcp/{key}", host=host)
            return OpenedProject(server, app, server.session_manager, close)
        except BaseException:
            close()
            raise

    try:
        HttpServer(ProjectsApp(served, open_project), listeners, limits=connection_limits, on_ready=on_ready).run()
    finally:
        for listener in listeners:
            listener.close()
        databases.close()  # after every project's router (closed when the app stops)


def _open_server(
    config: Config,
    agent: str | None,
    global_root: str | Path | None,
    databases: SharedDatabases | None = None,
    *,
    tools: str | None = None,
) -> tuple[MCPServer, Callable[[], None]]:
    """An MCP server over a new Router on ``config`` (warming up in the background), and how to close both."""
    from memrouter.router import Router

    router = Router(config, watch=True, databases=databases)
    team: TeamService | None = None
    activity, stopping = Activity(), threading.Event()
    try:
        # Bring the index up to date while the MCP SDK imports (over a second) and the
        # client connects, not on its first call; embed only once the server is idle.
        embeds = config.embed_background and config.search.mode != "lexical"
        router.workspace.index.background_expected = embeds  # a search answers at once; the embedder fills in
        warm = threading.Thread(target=_warm, args=(router, activity, stopping), name="memrouter-warm", daemon=True)
        warm.start()
        from memrouter.mcp.server import create_server
        from memrouter.mcp.service import MemoryService
        from memrouter.mcp.team_service import TeamService

        service = MemoryService(router, global_root=Path(global_root) if global_root else None)
        team = TeamService(config.index_dir, pinned_agent=agent, write_wait=config.index.write_wait, config=config)
        mirror = _start_team_bridge(config)
        server = create_server(service, team=team, tools=tools)
        server.middleware.append(activity.middleware())
    except BaseException:
        stopping.set()
        if team is not None:
            team.close()
        router.close()
        raise
    opened = team

    def close() -> None:
        stopping.set()
        opened.close()
        if mirror is not None:
            mirror.stop()
        router.close()

    return server, close


def _start_team_bridge(config: Config) -> BridgeRunner | None:
    """Mirror the team channel to claude-flow in the background when ``[team.claude_flow]`` is set."""
    if config.claude_flow is None:
        return None
    from memrouter.team.bridge import start_runner

    return start_runner(config)


def _warm(router: Router, activity: Activity, stopping: threading.Event) -> None:
    """Refresh the index and start watching the files (what the first call would do), then, unless
    searches are lexical or ``[embed] background = false``, embed what lacks vectors in the background,
    once the server has answered and gone quiet (``memrouter.mcp.activity``)."""
    try:
        router.status()
    except (MemoryRouterError, sqlite3.Error) as exc:
        log.warning("initial index refresh failed: %s", exc)
        router.workspace.index.background_expected = False
        return
    config = router.config
    if not config.embed_background or config.search.mode == "lexical":
        return
    if not activity.wait_for_quiet(stop=stopping):
        return  # the server is closing
    try:
        router.embed_in_background()
    except MemoryRouterError as exc:  # no model installed: searches say so, as they would
        router.workspace.index.background_expected = False
        log.warning("no background embedding: %s", exc)
