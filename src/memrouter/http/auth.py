"""The bearer-token check every HTTP face puts in front of its app, and the refusal it answers with.

A request without the right ``Authorization: Bearer <token>`` gets 401 with a
JSON-RPC error saying why (compared in constant time). The MCP server
(``memrouter.mcp.http``), its multi-project front (``memrouter.mcp.multi``) and
the embeddings endpoint (``memrouter.http.embeddings``) use it.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

__all__ = ["REFUSED", "BearerTokenMiddleware", "bearer_token", "refuse"]

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
