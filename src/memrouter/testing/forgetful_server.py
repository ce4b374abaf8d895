"""A fake Forgetful MCP server, for tests and benchmarks, built on the real MCP SDK.

It speaks MCP exactly like Forgetful 0.6.0 does from a client's point of
view: the same three meta-tools (``discover_forgetful_tools``,
``how_to_use_forgetful_tool``, ``execute_forgetful_tool``), the same memory
tool names and argument limits (title 200, content 2,000, context 500, at most
10 keywords and 10 tags, importance 1-10), results as structured content and
failures as tool errors reading ``Failed to execute '<tool>': <message>``
(``Memory with id N not found`` for an unknown id). ``query_memory`` leaves
obsolete memories out, ranks candidates by similarity, then lists
``primary_memories`` by importance with one ``{memory_id, similarity,
rerank_score}`` score each, as the real server does. There are no
embeddings: similarity is a deterministic cosine over word counts.

Run it::

    python -m memrouter.testing.forgetful_server --transport http --host 127.0.0.1 --port 8020
    python -m memrouter.testing.forgetful_server --transport stdio --db /tmp/fg.sqlite

MCP is served at ``/mcp`` and readiness at ``GET /health``. ``--db PATH``
keeps memories in a SQLite file (a restarted server keeps its data); the
default is in memory. ``--fail-mode`` injects faults into every
``tools/call``: ``slow`` (answer after ``--slow-seconds``), ``bad-shape`` (a
valid MCP result that breaks Forgetful's reply contract), ``missing-id``
(the true reply without its ``id`` and ``memory_id`` fields),
``wrong-types`` (the true reply with ids as strings, titles as numbers and
flags as strings), ``not-json`` (a text result that is not JSON, with no
structured content), and, over HTTP only, ``http500``, ``garbage`` (a body
that is not JSON) and ``protocol-error`` (JSON-RPC whose result is not a
tool result).

Every reply is checked against the schema the client reads with
(``memrouter.external.backends.forgetful_schema``) before faults are applied, so the
fake cannot drift from what the client expects; the argument models and
limits come from there too.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from memrouter.external.backends.forgetful_schema import REPLY_MODELS, MemoryCreate, MemoryUpdate
from memrouter.testing.forgetful_store import FakeForgetfulStore, MemoryNotFound

__all__ = [
    "FAIL_MODES",
    "FakeForgetfulStore",
    "Faults",
    "MemoryNotFound",
    "break_reply",
    "build_server",
    "fault_injector",
    "main",
]

FAIL_MODES = (
    "none", "slow", "bad-shape", "missing-id", "wrong-types", "not-json", "http500", "garbage", "protocol-error",
)  # fmt: skip
HTTP_ONLY_FAIL_MODES = ("http500", "garbage", "protocol-error")
VERSION = "0.6.0"

MEMORY_TOOLS: dict[str, str] = {
    "create_memory": "Create an atomic memory (title, content <= 2000 chars, context, keywords, tags).",
    "query_memory": "Search memories by meaning; primary memories plus linked memories and scores.",
    "update_memory": "Update fields of a memory by memory_id.",
    "link_memories": "Link a memory to related memories (both directions).",
    "unlink_memories": "Remove a link between two memories.",
    "get_memory": "Get one memory by memory_id, obsolete ones included.",
    "mark_memory_obsolete": "Soft-delete a memory with a reason and an optional superseded_by id.",
    "unobsolete_memory": "Restore an obsolete memory.",
    "get_recent_memories": "List recent memories.",
}


def break_reply(data: Any, mode: str) -> Any:
    """``data`` with Forgetful's contract broken the way ``mode`` says (``missing-id``, ``wrong-types``)."""
    if isinstance(data, list):
        return [break_reply(item, mode) for item in data]
    if not isinstance(data, dict):
        return data
    broken: dict[str, Any] = {}
    for key, value in data.items():
        if mode == "missing-id" and key in ("id", "memory_id"):
            continue
        if mode == "wrong-types" and key in ("id", "memory_id") and isinstance(value, int):
            broken[key] = str(value)
        elif mode == "wrong-types" and key in ("title", "content") and isinstance(value, str):
            broken[key] = len(value)
        elif mode == "wrong-types" and isinstance(value, bool):
            broken[key] = str(value).lower()
        else:
            broken[key] = break_reply(value, mode)
    return broken


@dataclass
class Faults:
    """The fault the server injects now; changed at run time through ``POST /_fault``."""

    mode: str = "none"
    slow_seconds: float = 30.0


def build_server(store: FakeForgetfulStore, faults: Faults | None = None, *, fault_control: bool = False) -> Any:
    """The ``MCPServer`` with Forgetful's three meta-tools over ``store``.

    ``faults`` is read on every call, so changing it changes the behaviour at
    once; ``fault_control`` adds ``POST /_fault {"mode", "slow_seconds"}``
    for tests that switch faults on a running server.
    """
    faults = faults if faults is not None else Faults()
    import anyio
    from mcp.server.mcpserver import MCPServer
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    server = MCPServer("Forgetful", version=VERSION, log_level="WARNING")

    def ok(data: dict[str, Any]) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(data, indent=2))],
            structured_content=data,
        )

    def failed(text: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    def unknown_tool(name: str) -> CallToolResult:
        return failed(f"Tool '{name}' not found in registry. Available tools (first 10): {', '.join(MEMORY_TOOLS)}")

    @server.tool()
    async def discover_forgetful_tools(category: str | None = None) -> CallToolResult:
        """Discover the Forgetful tools available through execute_forgetful_tool."""
        if category is not None and category.lower() != "memory":
            return failed(f"Invalid category '{category}'. Available categories: memory")
        tools = [{"name": n, "category": "memory", "description": d} for n, d in MEMORY_TOOLS.items()]
        return ok(
            {
                "tools_by_category": {"memory": tools},
                "total_count": len(tools),
                "categories_available": ["memory"],
                "filtered_by": category,
            }
        )

    @server.tool()
    async def how_to_use_forgetful_tool(tool_name: str) -> CallToolResult:
        """Detailed documentation for one Forgetful tool."""
        if tool_name not in MEMORY_TOOLS:
            return unknown_tool(tool_name)
        models: dict[str, type[BaseModel]] = {"create_memory": MemoryCreate, "update_memory": MemoryUpdate}
        model = models.get(tool_name)
        schema = model.model_json_schema() if model is not None else {}
        return ok(
            {
                "name": tool_name,
                "category": "memory",
                "description": MEMORY_TOOLS[tool_name],
                "json_schema": schema,
            }
        )

    @server.tool()
    async def execute_forgetful_tool(tool_name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Execute a Forgetful tool by name with its arguments."""
        if faults.mode == "slow":
            await anyio.sleep(faults.slow_seconds)
        if tool_name not in MEMORY_TOOLS:
            return unknown_tool(tool_name)
        try:
            data = store.execute(tool_name, arguments)
        except (ValidationError, MemoryNotFound, ValueError, TypeError) as exc:
            return failed(f"Failed to execute '{tool_name}': {exc}")
        REPLY_MODELS[tool_name].model_validate(data)  # a reply off the shared schema is a bug of the fake
        if faults.mode == "bad-shape":
            return ok({"unexpected": True, "primary_memories": "not a list", "id": None})
        if faults.mode == "not-json":
            return CallToolResult(content=[TextContent(type="text", text=f"{tool_name} done.")])
        if faults.mode in ("missing-id", "wrong-types"):
            return ok(break_reply(data, faults.mode))
        return ok(data)

    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "healthy", "service": "Forgetful", "version": VERSION})

    if fault_control:

        @server.custom_route("/_fault", methods=["POST"])  # type: ignore[untyped-decorator]
        async def set_fault(request: Request) -> Response:
            payload = await request.json()
            mode = payload.get("mode", "none")
            if mode not in FAIL_MODES:
                return JSONResponse({"error": f"unknown fail mode {mode!r}"}, status_code=400)
            faults.mode = mode
            faults.slow_seconds = float(payload.get("slow_seconds", faults.slow_seconds))
            return JSONResponse({"mode": faults.mode, "slow_seconds": faults.slow_seconds})

    return server


ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]],
    Awaitable[None],
]


def fault_injector(app: ASGIApp, faults: Faults) -> ASGIApp:
    """Wrap the HTTP app so every ``tools/call`` POST fails the way ``faults.mode`` says."""

    async def wrapped(
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or faults.mode not in HTTP_ONLY_FAIL_MODES:
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") == "tools/call":
            await _send_fault(send, faults.mode, request.get("id"))
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


async def _send_fault(send: Callable[[dict[str, Any]], Awaitable[None]], fail_mode: str, request_id: Any) -> None:
    if fail_mode == "http500":
        status, content_type, body = 500, b"text/plain", b"Internal Server Error"
    elif fail_mode == "garbage":
        status, content_type, body = 200, b"application/json", b'{"jsonrpc": "2.0", "id": <<garbage'
    else:
        reply = {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"content": "not a list", "isError": "perhaps"},
        }
        status, content_type, body = 200, b"application/json", json.dumps(reply).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: serve the fake over HTTP or stdio until stopped."""
    parser = argparse.ArgumentParser(
        prog="python -m memrouter.testing.forgetful_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--transport", choices=("http", "stdio"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8020)
    parser.add_argument("--db", default=":memory:", help="SQLite file to keep memories in (default: in memory)")
    parser.add_argument("--fail-mode", choices=FAIL_MODES, default="none")
    parser.add_argument("--slow-seconds", type=float, default=30.0)
    parser.add_argument(
        "--fault-control", action="store_true", help="accept POST /_fault to change the fail mode (HTTP)"
    )
    options = parser.parse_args(argv)
    if options.transport == "stdio" and options.fail_mode in HTTP_ONLY_FAIL_MODES:
        parser.error(f"--fail-mode {options.fail_mode} needs --transport http")

    store = FakeForgetfulStore(options.db)
    faults = Faults(options.fail_mode, options.slow_seconds)
    server = build_server(store, faults, fault_control=options.fault_control)
    try:
        if options.transport == "stdio":
            server.run("stdio")
        else:
            import anyio
            import uvicorn

            app = fault_injector(server.streamable_http_app(host=options.host), faults)
            config = uvicorn.Config(app, host=options.host, port=options.port, log_level="warning", lifespan="on")
            anyio.run(uvicorn.Server(config).serve)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this server is meant to be stopped
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
