"""Streamable HTTP for the MCP server, with a bearer-token check in front of it.

A server bound to a loopback address may run without a token; any other
address needs one. Slow clients are cut off as ``memrouter.serving`` says. With a token configured, every HTTP request must carry
``Authorization: Bearer <token>`` or it gets 401 (compared in constant time).
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer

    from memrouter.serving import ConnectionLimits

__all__ = ["BearerTokenMiddleware", "http_app", "run_http", "MCP_PATH"]

MCP_PATH = "/mcp"


class BearerTokenMiddleware:
    """ASGI middleware: HTTP requests without the right bearer token get 401."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self.app = app
        self._expected = b"Bearer " + token.encode("utf-8")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan: start and stop the session manager
            return
        given = next((value for key, value in scope.get("headers", []) if key == b"authorization"), b"")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "unauthorized", "detail": "send Authorization: Bearer <token>"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="memrouter"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


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
    from memrouter.serving import HttpServer

    HttpServer(http_app(server, host, token), listeners, limits=limits, on_ready=on_ready).run()
