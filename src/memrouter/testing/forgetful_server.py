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
(``memrouter.backends.forgetful_schema``) before faults are applied, so the
fake cannot drift from what the client expects; the argument models and
limits come from there too.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from memrouter.backends.forgetful_schema import REPLY_MODELS, MemoryCreate, MemoryUpdate

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


class MemoryNotFound(LookupError):
    """No memory with that id (the message is Forgetful's)."""

    def __init__(self, memory_id: int) -> None:
        super().__init__(f"Memory with id {memory_id} not found")


_TOKEN = re.compile(r"[a-z0-9]+")


def similarity(query: str, text: str) -> float:
    """Cosine similarity of word counts: deterministic, in [0, 1]."""
    a = Counter(_TOKEN.findall(query.lower()))
    b = Counter(_TOKEN.findall(text.lower()))
    if not a or not b:
        return 0.0
    dot = sum(count * b[token] for token, count in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return round(dot / norm, 6)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class FakeForgetfulStore:
    """Forgetful's memory tools over SQLite (``":memory:"`` or a file that survives restarts)."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL)"
        )
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    # -- storage -----------------------------------------------------------

    def _load(self, memory_id: int) -> dict[str, Any]:
        row = self._db.execute("SELECT data FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        data: dict[str, Any] = json.loads(row[0])
        return data

    def _save(self, memory: Mapping[str, Any]) -> None:
        self._db.execute("UPDATE memories SET data = ? WHERE id = ?", (json.dumps(memory), memory["id"]))

    def _all(self) -> list[dict[str, Any]]:
        return [json.loads(row[0]) for row in self._db.execute("SELECT data FROM memories ORDER BY id")]

    # -- tools -------------------------------------------------------------

    def execute(self, tool_name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run one memory tool; raises ``ValidationError``, ``MemoryNotFound`` or ``ValueError``."""
        handler: Callable[[dict[str, Any]], dict[str, Any]] = getattr(self, "tool_" + tool_name)
        with self._lock:
            return handler(dict(arguments))

    def tool_create_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """create_memory: validate, store, answer like Forgetful's MemoryCreateWriteResponse."""
        _require(args, "title", "content", "context", "keywords", "tags")
        data = MemoryCreate(**args)
        now = _now()
        memory: dict[str, Any] = {
            **data.model_dump(),
            "project_ids": data.project_ids or [],
            "source_files": data.source_files,
            "code_artifact_ids": [],
            "document_ids": [],
            "file_ids": [],
            "created_at": now,
            "updated_at": now,
            "linked_memory_ids": [],
            "is_obsolete": False,
            "obsolete_reason": None,
            "superseded_by": None,
            "obsoleted_at": None,
        }
        # one transaction, as Forgetful's own: a server killed mid-create leaves no half-written row
        self._db.execute("BEGIN IMMEDIATE")
        try:
            cursor = self._db.execute("INSERT INTO memories (data) VALUES ('{}')")
            memory["id"] = cursor.lastrowid
            self._save(memory)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return {
            "id": memory["id"],
            "title": memory["title"],
            "linked_memory_ids": [],
            "project_ids": memory["project_ids"],
            "code_artifact_ids": [],
            "document_ids": [],
            "file_ids": [],
            "similar_memories": [],
            "obsolete_matches": [],
            "plugin_warnings": [],
        }

    def tool_update_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """update_memory: change the given fields; answer the whole memory."""
        memory_id = _memory_id(args, "update_memory")
        changes = MemoryUpdate(**args).model_dump(exclude_none=True)
        if "importance" in changes:
            changes["importance"] = max(1, min(10, changes["importance"]))
        memory = self._load(memory_id)
        memory.update(changes)
        memory["updated_at"] = _now()
        self._save(memory)
        return {**memory, "plugin_warnings": []}

    def tool_get_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """get_memory: one memory, obsolete or not."""
        return self._load(_memory_id(args, "get_memory"))

    def tool_mark_memory_obsolete(self, args: dict[str, Any]) -> dict[str, Any]:
        """mark_memory_obsolete: soft delete with a reason."""
        memory_id = _memory_id(args, "mark_memory_obsolete")
        if "reason" not in args:
            raise ValueError("mark_memory_obsolete() missing 1 required keyword-only argument: 'reason'")
        superseded_by = args.get("superseded_by")
        if superseded_by is not None:
            self._load(int(superseded_by))
        memory = self._load(memory_id)
        memory.update(
            is_obsolete=True,
            obsolete_reason=str(args["reason"]),
            superseded_by=None if superseded_by is None else int(superseded_by),
            obsoleted_at=_now(),
        )
        self._save(memory)
        return {"success": True}

    def tool_unobsolete_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """unobsolete_memory: restore."""
        memory = self._load(_memory_id(args, "unobsolete_memory"))
        memory.update(is_obsolete=False, obsolete_reason=None, superseded_by=None, obsoleted_at=None)
        self._save(memory)
        return {"success": True}

    def tool_link_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        """link_memories: symmetric links from memory_id to each of related_ids."""
        memory_id = _memory_id(args, "link_memories")
        related = args.get("related_ids")
        if isinstance(related, int):
            related = [related]
        if not related:
            raise ValueError("related_ids cannot be empty")
        related_ids = [int(r) for r in related]
        if memory_id in related_ids:
            raise ValueError("Cannot link memory to itself")
        source = self._load(memory_id)
        targets = [self._load(r) for r in related_ids]
        created: list[int] = []
        for target in targets:
            if target["id"] not in source["linked_memory_ids"]:
                source["linked_memory_ids"].append(target["id"])
                created.append(target["id"])
            if memory_id not in target["linked_memory_ids"]:
                target["linked_memory_ids"].append(memory_id)
            self._save(target)
        self._save(source)
        return {"linked_memory_ids": created}

    def tool_unlink_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        """unlink_memories: remove one symmetric link."""
        source = self._load(_memory_id(args, "unlink_memories"))
        target = self._load(int(args.get("related_id", args.get("target_id", 0))))
        removed = target["id"] in source["linked_memory_ids"]
        source["linked_memory_ids"] = [i for i in source["linked_memory_ids"] if i != target["id"]]
        target["linked_memory_ids"] = [i for i in target["linked_memory_ids"] if i != source["id"]]
        self._save(source)
        self._save(target)
        return {"success": removed}

    def tool_get_recent_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        """get_recent_memories: newest first, paged by ``offset`` as the real server does.

        The real server also clamps ``limit`` to 1..100; the fake does not (the
        sync test helpers read a whole module's memories in one call).
        """
        limit = int(args.get("limit", 10))
        offset = max(0, int(args.get("offset", 0)))
        include_obsolete = bool(args.get("include_obsolete", False))
        memories = [m for m in self._all() if include_obsolete or not m["is_obsolete"]]
        memories.sort(key=lambda m: m["id"], reverse=True)
        return {"memories": memories[offset : offset + max(1, limit)], "total_count": len(memories)}

    def tool_query_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        """query_memory: top k by similarity, listed by importance, obsolete ones left out."""
        _require(args, "query", "query_context")
        query = str(args["query"])
        k = max(1, min(int(args.get("k", 3)), 20))
        threshold = args.get("importance_threshold")
        candidates = [m for m in self._all() if not m["is_obsolete"]]
        if threshold is not None:
            candidates = [m for m in candidates if m["importance"] >= max(1, min(int(threshold), 10))]
        scored = [(similarity(query, _searchable(m)), m) for m in candidates]
        scored.sort(key=lambda pair: (-pair[0], pair[1]["id"]))
        top = scored[:k]
        top.sort(key=lambda pair: (-pair[1]["importance"], pair[1]["id"]))
        primary = [m for _, m in top]
        primary_ids = {m["id"] for m in primary}
        linked: list[dict[str, Any]] = []
        if args.get("include_links", True):
            per_primary = int(args.get("max_links_per_primary", 5))
            seen = set(primary_ids)
            for memory in primary:
                for linked_id in memory["linked_memory_ids"][:per_primary]:
                    if linked_id in seen:
                        continue
                    seen.add(linked_id)
                    neighbour = self._load(linked_id)
                    if not neighbour["is_obsolete"]:
                        linked.append({"linked_to_id": memory["id"], "memory": neighbour})
        returned = primary + [entry["memory"] for entry in linked]
        return {
            "query": query,
            "primary_memories": primary,
            "linked_memories": linked,
            "scores": [{"memory_id": m["id"], "similarity": s, "rerank_score": None} for s, m in top],
            "total_count": len(primary) + len(linked),
            "token_count": sum(len(m["content"].split()) for m in returned),
            "truncated": False,
        }


def _searchable(memory: Mapping[str, Any]) -> str:
    parts = [memory["title"], memory["content"], memory.get("context") or ""]
    parts += list(memory.get("keywords") or []) + list(memory.get("tags") or [])
    return "\n".join(parts)


def _require(args: Mapping[str, Any], *names: str) -> None:
    missing = [name for name in names if name not in args]
    if missing:
        raise ValueError(f"missing required argument(s): {', '.join(missing)}")


def _memory_id(args: MutableMapping[str, Any], tool: str) -> int:
    value = args.pop("memory_id", args.pop("id", None))
    if value is None:
        raise ValueError(f"{tool} requires memory_id (or id)")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"memory_id must be an integer, got {value!r}") from exc


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


def build_server(
    store: FakeForgetfulStore, faults: Faults | None = None, *, fault_control: bool = False
) -> Any:
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
        return failed(
            f"Tool '{name}' not found in registry. Available tools (first 10): {', '.join(MEMORY_TOOLS)}"
        )

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


async def _send_fault(
    send: Callable[[dict[str, Any]], Awaitable[None]], fail_mode: str, request_id: Any
) -> None:
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
    parser.add_argument(
        "--db", default=":memory:", help="SQLite file to keep memories in (default: in memory)"
    )
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
            config = uvicorn.Config(
                app, host=options.host, port=options.port, log_level="warning", lifespan="on"
            )
            anyio.run(uvicorn.Server(config).serve)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this server is meant to be stopped
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
