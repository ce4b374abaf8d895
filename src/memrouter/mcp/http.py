"""Streamable HTTP for the MCP server, with a bearer-token check in front of it.

A server bound to a loopback address may run without a token; any other
address needs one. Slow clients are cut off as ``memrouter.http.serve`` says. With a token configured, every HTTP request must carry
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

    from memrouter.http.serve import ConnectionLimits

__all__ = ["BearerTokenMiddleware", "bearer_token", "http_app", "refuse", "run_http", "MCP_PATH"]

MCP_PATH = "/mcp"
# The JSON-RPC error code of a request refused before it reached the MCP server (the server-defined range).
REFUSED = -32001


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
        if hmac.compare_digest(bearer_token(scope), self._expected):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await refuse(send, 401, "unauthorized", "send Authorization: Bearer <token>")


async def refuse(send: Any, status: int, error: str, detail: str) -> None:
    """Answer an HTTP request with ``status`` and a JSON-RPC error saying why (401 adds ``WWW-Authenticate``).

    MCP clients surface a JSON-RPC error in a 4xx body as the call's error, so
    the person at the client reads ``detail``, not a bare status code.
    """
    reply = {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": f"{error}: {detail}"}}
    body = json.dumps(reply).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memrouter"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bearer_token(scope: dict[str, Any]) -> bytes:
    """The value of the request's ``Authorization`` header (empty when there is none)."""
    return next((value for key, value in scope.get("headers", []) if key == b"authorization"), b"")


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
    from memrouter.http.serve import HttpServer

    HttpServer(http_app(server, host, token), listeners, limits=limits, on_ready=on_ready).run()
