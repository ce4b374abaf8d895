"""Every request gets an answer, whatever text it holds: lone surrogates and undecodable messages.

A lone surrogate written as a JSON escape (``"\\udcff"``) is valid JSON but
not text: it cannot be encoded as UTF-8, so it can be neither stored nor sent
back. Two places guard against it:

- ``refuse_lone_surrogates``, a server middleware, answers any request whose
  parameters hold one with a JSON-RPC "invalid params" error saying where,
  before a tool or resource sees it (over HTTP the SDK decodes such a body).
- ``AnsweringReadStream``, for stdio (``run_stdio``): the SDK's stdio
  transport decodes each line with pydantic, which refuses such a line. The
  transport hands the failure to the server as an exception, and the server
  only logs it, so the client would wait forever. The stream finds the
  request's id in the line and answers a JSON-RPC error naming what is wrong
  (``id: null`` when the id cannot be read, as JSON-RPC says; nothing for a
  notification).
"""

from __future__ import annotations

import json
import logging
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError

__all__ = ["AnsweringReadStream", "lean_schema", "refuse_lone_surrogates", "reply_to_undecodable", "run_stdio"]

log = logging.getLogger(__name__)

_UNREADABLE = object()  # the line is not JSON at all


async def refuse_lone_surrogates(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a request whose parameters hold a lone surrogate gets an "invalid params" error."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    where = _surrogate_in(ctx.params, "params") if ctx.params else None
    if where is None:
        return await call_next(ctx)
    log.warning("refused %s: %s", ctx.method, _unicode_message(*where))
    if ctx.request_id is None:
        return None  # a notification: dropped, nobody waits for an answer
    raise MCPError(INVALID_PARAMS, _unicode_message(*where))


def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdin and stdout until stdin closes (``MCPServer.run("stdio")``, answering every request)."""
    import anyio
    from mcp.server.stdio import stdio_server

    # The SDK keeps its low-level server private; MCPServer.run_stdio_async runs it just like this.
    lowlevel = server._lowlevel_server

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            answering = AnsweringReadStream(read_stream, write_stream)
            await lowlevel.run(answering, write_stream, lowlevel.create_initialization_options())

    anyio.run(serve)


class AnsweringReadStream:
    """A read stream that answers the messages its transport could not decode and passes the rest on."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], replies: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, as the inner stream keeps it (see the SDK's ReadStream)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.__anext__()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _answer(self, failure: Exception) -> None:
        from mcp.shared.message import SessionMessage

        reply = reply_to_undecodable(failure)
        log.warning("a message could not be decoded: %s", reply.error.message if reply else failure)
        if reply is not None:
            await self._replies.send(SessionMessage(reply))


def reply_to_undecodable(failure: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering a message the transport failed to decode (None for a notification)."""
    from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    message = _message_of(failure)
    if message is _UNREADABLE:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error: not JSON"))
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) or _surrogate_in(request_id):
        if isinstance(message, dict) and "method" in message and "id" not in message:
            return None  # a notification: nobody waits for an answer
        request_id = None
    where = _surrogate_in(message)
    if where is not None:
        path, char = where
        code = INVALID_PARAMS if path.startswith("params") else INVALID_REQUEST
        text = _unicode_message(path, char)
    else:
        code, text = INVALID_REQUEST, "Invalid request: not a JSON-RPC message this server understands"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text))


def _unicode_message(path: str, char: str) -> str:
    return (
        f"the request is not valid Unicode: {path} holds a lone surrogate (U+{ord(char):04X}); "
        "send text that can be encoded as UTF-8"
    )


def _message_of(failure: Exception) -> Any:
    """The decoded message behind a transport's decoding failure, as far as it can be recovered."""
    from pydantic import ValidationError

    if not isinstance(failure, ValidationError):
        return None
    for error in failure.errors():
        if error["type"] == "json_invalid" and isinstance(error["input"], (str, bytes, bytearray)):
            try:
                return json.loads(error["input"])  # Python's parser takes lone surrogates
            except (ValueError, RecursionError):
                return _UNREADABLE
        if len(error["loc"]) == 1 or (error["type"] == "missing" and len(error["loc"]) == 2):
            return error["input"]  # the whole message, checked against one kind of JSON-RPC message
    return None


def _surrogate_in(value: Any, path: str = "") -> tuple[str, str] | None:
    """Where in ``value`` a lone surrogate is (a dotted path) and which, or None."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return where or "the message", item[exc.start]
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = key[:40] if _surrogate_in(key) is None else "(a key)"
                stack.append((f"{where}.{name}" if where else name, child))
                stack.append((where or "the message", key))
        elif isinstance(item, list):
            stack.extend((f"{where}[{index}]", child) for index, child in reversed(list(enumerate(item))))
    return None


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema without what costs the agent context and tells it nothing.

    Pydantic adds a ``title`` to every argument and spells an optional list
    as ``anyOf: [array, null]`` with ``default: null``; an argument that is
    simply not required says the same. Validation still runs on the full model.
    """
    properties: dict[str, Any] = {}
    for argument, spec in schema.get("properties", {}).items():
        spec = {key: value for key, value in spec.items() if key != "title"}
        options = spec.get("anyOf")
        if options is not None and "default" in spec and spec["default"] is None:
            concrete = [option for option in options if option != {"type": "null"}]
            if len(concrete) == 1:
                rest = {key: value for key, value in spec.items() if key not in ("anyOf", "default")}
                spec = {**concrete[0], **rest}
        properties[argument] = spec
    lean: dict[str, Any] = {"type": "object", "properties": properties}
    for key in ("required", "$defs"):
        if key in schema:
            lean[key] = schema[key]
    return lean
