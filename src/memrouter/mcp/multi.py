"""One streamable-HTTP MCP server for several repositories (``memrouter serve --projects FILE``).

Each project is served at ``/mcp/<key>``: the URL is all an MCP client needs
to name its project, so every client that speaks streamable HTTP can use it.
Every request must carry ``Authorization: Bearer <token>`` with a token from
the projects file (else 401), and that token must allow the project in the
path (else 403, worded the same whether or not the project exists, so a token
cannot probe for other projects' names). A token that may only read a
project gets 403 for a call of any tool not annotated read-only (its request
body is read first, up to the MCP SDK's size limit). A project is opened on its first
allowed request: its own Router (its files, its local index, the shared
database URL), team channel and MCP server, whose session manager runs until
the server stops.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from memrouter.core.errors import MemoryRouterError
from memrouter.core.lazylog import LazyLogger
from memrouter.http.auth import bearer_token, refuse
from memrouter.mcp.http import MCP_PATH

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from memrouter.config.projects import ServedProjects

__all__ = ["OpenedProject", "ProjectsApp"]

log = LazyLogger(__name__)
_PREFIX = MCP_PATH + "/"
_BEARER = b"Bearer "


@dataclass
class OpenedProject:
    """A project being served: its MCP server, that server's ASGI app and session manager, and how to close it."""

    server: Any
    app: Any
    session_manager: Any
    close: Callable[[], None] = field(default=lambda: None)
    read_tools: frozenset[str] = frozenset()  # filled in when the project opens


class ProjectsApp:
    """The ASGI app of ``serve --projects``: checks the token and the project, then hands the request on.

    ``open_project(key)`` builds a project's ``OpenedProject`` (in a worker
    thread: opening a router reads its files); it is called once per project.
    """

    def __init__(self, served: ServedProjects, open_project: Callable[[str], OpenedProject]) -> None:
        self.served = served
        self._open_project = open_project
        self._opened: dict[str, OpenedProject] = {}
        self._locks = {key: anyio.Lock() for key in served.projects}
        self._group: TaskGroup | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        given = bearer_token(scope)
        grant = self.served.grant_for(given[len(_BEARER) :]) if given.startswith(_BEARER) else None
        if grant is None:
            await refuse(send, 401, "unauthorized", "send Authorization: Bearer <token> with a token of this server")
            return
        path: str = scope["path"]
        key = path[len(_PREFIX) :].rstrip("/") if path.startswith(_PREFIX) else ""
        if not key:
            await refuse(send, 404, "not_found", f"name the project in the path: {_PREFIX}<project>")
            return
        if key not in grant.projects:
            await refuse(send, 403, "forbidden", f"this token may not use the project {key!r}")
            return
        try:
            project = await self._project(key)
        except (MemoryRouterError, OSError) as exc:
            log.warning("cannot open project %s: %s", key, exc)
            await refuse(send, 503, "unavailable", f"the project {key!r} cannot be opened: {exc}")
            return
        if key not in grant.writable and scope["method"] == "POST":
            body = await _body(receive)
            writes = body is None or _writing_call(body, project.read_tools)
            if writes:
                what = "the request is too large to check" if body is None else f"{writes} is not read-only"
                await refuse(send, 403, "forbidden", f"this token may only read the project {key!r}: {what}")
                return
            receive = _replay(body or b"", receive)
        await project.app({**scope, "path": MCP_PATH + "/" + key}, receive, send)

    async def _project(self, key: str) -> OpenedProject:
        opened = self._opened.get(key)
        if opened is not None:
            return opened
        async with self._locks[key]:
            opened = self._opened.get(key)
            if opened is None:
                if self._group is None:
                    raise MemoryRouterError("the server is not running")
                opened = await anyio.to_thread.run_sync(self._open_project, key)
                try:
                    await self._group.start(_run_sessions, opened.session_manager)
                except BaseException:
                    opened.close()
                    raise
                opened.read_tools = frozenset(
                    tool.name for tool in await opened.server.list_tools()
                    if tool.annotations is not None and tool.annotations.read_only_hint
                )  # fmt: skip
                self._opened[key] = opened
        return opened

    async def _lifespan(self, receive: Any, send: Any) -> None:
        await receive()  # lifespan.startup
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
                group.cancel_scope.cancel()  # ends every project's sessions
        finally:
            self._group = None
            for opened in self._opened.values():
                opened.close()
            self._opened.clear()
        await send({"type": "lifespan.shutdown.complete"})


async def _run_sessions(session_manager: Any, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """Run a project's MCP session manager until the server's task group is cancelled."""
    async with session_manager.run():
        task_status.started()
        await anyio.sleep_forever()


async def _body(receive: Any) -> bytes | None:
    """The request body, or None when it is larger than the MCP SDK accepts anyway."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client went away: the MCP app sees an empty body
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _writing_call(body: bytes, read_tools: frozenset[str]) -> str | None:
    """The name of a tool ``body`` calls that is not read-only (a JSON-RPC message or a batch), else None.

    A body that is not JSON-RPC is left for the MCP app to refuse.
    """
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if name not in read_tools:
                return repr(name) if isinstance(name, str) else "a tool call without a name"
    return None


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands the already read ``body`` on first, then waits on the real one."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
