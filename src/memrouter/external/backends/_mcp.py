"""A synchronous facade over one MCP client session (the official ``mcp`` SDK).

The router and sync are synchronous; the SDK is async. ``McpSession`` runs a
private asyncio event loop on a daemon thread and keeps one ``mcp.Client``
open there across calls, so a call costs one round trip, not a handshake.
Each call has a deadline covering (re)connecting and the call itself. A
failed connection is dropped in the background and the next call connects
afresh, so a restarted server is picked up without restarting memrouter.

Every failure leaves this module as a memrouter error (``translate``):
unreachable, refused, timed out, HTTP 5xx, a dead process ->
``BackendUnavailable``; anything that shows the peer broke the protocol
(unparseable JSON, a malformed result) -> ``BackendContractError``.

This module imports the SDK at import time; import it lazily.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from memrouter.core.errors import BackendContractError, BackendError, BackendUnavailable

__all__ = ["McpSession", "http_client_factory", "stdio_client_factory", "translate"]

logger = logging.getLogger(__name__)

ClientFactory = Callable[[], Client]

# JSON-RPC error codes that say "the peer or the path to it is in trouble", not "you broke the contract".
_TRANSIENT_CODES = frozenset({mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT, mcp_types.INTERNAL_ERROR})
_CLOSE_GRACE_S = 2.0


def http_client_factory(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    mode: str = "auto",
) -> ClientFactory:
    """Build ``mcp.Client`` objects for a streamable-HTTP endpoint, with extra headers.

    ``timeout`` bounds connecting and sending; call deadlines are McpSession's.
    """
    header_map = dict(headers or {})

    def factory() -> Client:
        # Deadlines are enforced per call by McpSession; reads are unbounded here so the
        # server-to-client event stream is not torn down by an idle read timeout.
        http = httpx2.AsyncClient(headers=header_map, timeout=httpx2.Timeout(timeout, read=None))
        transport = _OwningTransport(streamable_http_client(url, http_client=http), http)
        return Client(transport, mode=mode)

    return factory


def stdio_client_factory(
    command: list[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    errlog: TextIO,
    mode: str = "auto",
) -> ClientFactory:
    """Build ``mcp.Client`` objects that start ``command`` and speak MCP over its stdio."""
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(env) if env else None, cwd=cwd)

    def factory() -> Client:
        return Client(stdio_client(params, errlog=errlog), mode=mode)

    return factory


class _OwningTransport:
    """A transport that also closes the ``httpx2.AsyncClient`` it was given."""

    def __init__(self, inner: AbstractAsyncContextManager[Any], http: httpx2.AsyncClient) -> None:
        self._inner = inner
        self._http = http

    async def __aenter__(self) -> Any:
        await self._http.__aenter__()
        try:
            return await self._inner.__aenter__()
        except BaseException:
            await self._http.aclose()
            raise

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        try:
            return await self._inner.__aexit__(*exc_info)
        finally:
            await self._http.aclose()


class McpSession:
    """One MCP client session kept open on a private event-loop thread, used synchronously.

    ``label`` names the peer in error messages. ``timeout`` is the default
    deadline of one call; opening a connection (starting a stdio server, the
    handshake) has its own deadline, ``connect_timeout``. Thread-safe.
    """

    def __init__(
        self,
        factory: ClientFactory,
        *,
        label: str,
        timeout: float = 10.0,
        connect_timeout: float = 30.0,
    ) -> None:
        self._factory = factory
        self.label = label
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # The fields below are only touched on the loop thread.
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._dropping: set[asyncio.Task[None]] = set()
        self._connect_lock: asyncio.Lock | None = None
        self.connects = 0
        """How many connections were opened (for tests: reuse and reconnection)."""

    # -- synchronous API -------------------------------------------------

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], timeout: float | None = None
    ) -> mcp_types.CallToolResult:
        """Call one tool and return its raw result (a tool error is a result, not an exception)."""
        deadline = self.timeout if timeout is None else timeout
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(self._call(name, dict(arguments), deadline), loop)
        try:
            # The coroutine enforces the deadline itself; this margin only guards against a stuck loop.
            return future.result(timeout=self.connect_timeout + deadline + _CLOSE_GRACE_S + 1.0)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise BackendUnavailable(f"{self.label}: no answer within {deadline:g} s") from exc

    def close(self) -> None:
        """Close the session (and stop a stdio server) and the loop thread; reusable afterwards."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=3 * _CLOSE_GRACE_S + 3.0)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            logger.warning("%s: closing the MCP session did not finish: %s", self.label, exc)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5.0)

    # -- loop thread -----------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_run_loop, args=(loop,), name=f"memrouter-mcp-{self.label}", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _call(self, name: str, arguments: dict[str, Any], timeout: float) -> mcp_types.CallToolResult:
        limit = self.connect_timeout
        try:
            with anyio.fail_after(limit):
                client = await self._connected()
            limit = timeout
            with anyio.fail_after(limit):
                return await client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except Exception as exc:
            error = translate(exc, self.label, limit)
            self._drop_soon()
            raise error from exc

    async def _connected(self) -> Client:
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if self._client is not None and self._holder is not None and not self._holder.done():
                return self._client
            self._drop_soon()
            if self._dropping:
                await asyncio.wait(self._dropping, timeout=_CLOSE_GRACE_S)
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            self._stop = asyncio.Event()
            self._holder = loop.create_task(self._hold(ready, self._stop))
            self.connects += 1
            self._client = await ready
            return self._client

    async def _hold(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Own the client's context for its whole life, so it is entered and left in one task."""
        try:
            async with self._factory() as client:
                if ready.done():
                    return
                ready.set_result(client)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.debug("%s: MCP connection ended: %r", self.label, exc)

    def _drop_soon(self) -> None:
        """Forget the current connection and close it in the background."""
        holder, stop = self._holder, self._stop
        self._holder = self._stop = None
        self._client = None
        if holder is None or holder.done():
            return
        task = asyncio.get_running_loop().create_task(_close_holder(holder, stop))
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    async def _shutdown(self) -> None:
        self._drop_soon()
        if self._dropping:
            await asyncio.wait(self._dropping, timeout=2 * _CLOSE_GRACE_S + 1.0)


async def _close_holder(holder: asyncio.Task[None], stop: asyncio.Event | None) -> None:
    if stop is not None:
        stop.set()
    done, _ = await asyncio.wait({holder}, timeout=_CLOSE_GRACE_S)
    if not done:
        holder.cancel()
        await asyncio.wait({holder}, timeout=_CLOSE_GRACE_S)


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=_CLOSE_GRACE_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, MCPError):
        return exc.code in _TRANSIENT_CODES
    return isinstance(
        exc,
        TimeoutError
        | OSError
        | httpx2.TransportError
        | anyio.ClosedResourceError
        | anyio.BrokenResourceError
        | anyio.EndOfStream,
    )


def _describe(exc: BaseException, timeout: float | None) -> str:
    if isinstance(exc, TimeoutError) and timeout is not None:
        return f"no answer within {timeout:g} s"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, ValidationError):
        return f"malformed reply: {exc.error_count()} validation error(s): {exc.errors()[0]['msg']}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def translate(exc: BaseException, label: str, timeout: float | None = None) -> BackendError:
    """Map an exception raised by the SDK or its transports to memrouter's error tree."""
    if isinstance(exc, BackendError):
        return exc
    leaves = list(_leaves(exc)) or [exc]
    for leaf in leaves:
        if _is_transient(leaf):
            return BackendUnavailable(f"{label}: {_describe(leaf, timeout)}")
    return BackendContractError(f"{label}: {_describe(leaves[0], timeout)}")
