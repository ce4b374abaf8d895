"""Streamable HTTP for the MCP server, with a bearer-token check in front of it.

A server bound to a loopback address may run without a token; any other
address needs one. Slow clients are cut off as ``memrouter.http.serve`` says. With a token configured, every HTTP request must carry
``Authorization: Bearer <token>`` or it gets 401 (compared in constant time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer

    from memrouter.http.serve import ConnectionLimits

from memrouter.http.auth import BearerTokenMiddleware
from memrouter.http.serve import HttpServer

__all__ = ["MCP_PATH", "http_app", "run_http"]

MCP_PATH = "/mcp"


def http_app(server: MCPServer, host: str, token: str | None) -> Any:
    """The ASGI app serving ``server`` at ``/mcp``, behind the bearer check when ``token`` is set."""
    app: Any = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if token:
        app = BearerTokenMiddleware(app, token)
    return app


def run_http(
    server: MCPServer,
    listeners: list[socket.socket],
    host: str,
    token: str | None,
    *,
    limits: ConnectionLimits | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve ``server`` over streamable HTTP at ``/mcp`` on bound ``listeners`` until the process is stopped."""

    HttpServer(http_app(server, host, token), listeners, limits=limits, on_ready=on_ready).run()
