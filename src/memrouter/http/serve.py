"""Serving an ASGI app over HTTP/1.1 (uvicorn), for ``serve --http``, ``embed-serve`` and ``ui``.

The token rule all three share (``require_token_off_loopback``): bound to a
loopback address a server may run without a token; any other address needs
one, and a token is never blank.

Two things plain uvicorn does not do:

- **Bind first.** ``bind_listeners`` opens the listening sockets before
  anything else, so an address in use or not allowed is a ``ConfigError``
  raised before a word is printed; ``HttpServer`` calls ``on_ready`` only
  once the app has started and the sockets accept connections.
- **Slow clients are cut off** (``ConnectionLimits``). A request's head must
  arrive in full within ``header_timeout`` seconds of the connection opening
  (or of the previous response on a kept-alive connection), and its body
  within ``body_timeout`` seconds of the head: these are deadlines, not idle
  timers, so trickling a byte at a time does not keep a connection. At most
  ``max_unfinished`` connections may be part-way through sending a request;
  a new one beyond that pushes out the one that has been at it longest.
  A connection cut off before its response started gets a 408 (or 503 when
  pushed out) saying why, then is closed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import ConfigError

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ConnectionLimits", "HttpServer", "bind_listeners", "is_loopback", "require_token_off_loopback"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_token_off_loopback(
    host: str, token: str | None, *, serving: str = "serving", credential: str = "a bearer token"
) -> None:
    """ConfigError when ``token`` is given but blank, or when ``host`` is not loopback and there is no token.

    ``serving`` and ``credential`` name the server and its token in the message
    (``serving the UI on 0.0.0.0 (not loopback) needs a token: ...``).
    """
    if token is not None and not token.strip():
        raise ConfigError(f"the {credential.removeprefix('a ')} must not be empty")
    if not token and not is_loopback(host):
        raise ConfigError(f"{serving} on {host} (not loopback) needs {credential}: pass --token or set MEMROUTER_TOKEN")


@dataclass(frozen=True)
class ConnectionLimits:
    """Deadlines (seconds) for a request's head and body, and how many connections may be mid-request."""

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    max_unfinished: int = 512

    def __post_init__(self) -> None:
        if self.header_timeout <= 0 or self.body_timeout <= 0 or self.max_unfinished < 1:
            raise ConfigError("connection limits must be positive")


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_listeners(host: str, port: int, backlog: int = 2048) -> list[socket.socket]:
    """Listening TCP sockets on every address ``host`` resolves to (port 0: any free port).

    Raises ConfigError when the host is unknown or a socket cannot be bound
    (the port is in use, the address is not this machine's, no permission).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {_authority(host, port)}: {exc.strerror}") from exc
    listeners: list[socket.socket] = []
    seen: set[tuple[int, Any]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            listener = socket.socket(family, kind, proto)
            listeners.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind(address)
            listener.listen(backlog)
    except OSError as exc:
        for listener in listeners:
            listener.close()
        raise ConfigError(f"cannot listen on {_authority(host, port)}: {exc.strerror or exc}") from exc
    return listeners


class HttpServer:
    """``app`` served on already bound ``listeners`` until ``stop()`` or SIGINT/SIGTERM (main thread).

    ``on_ready`` is called once the app's startup has finished and the
    sockets accept connections; ``started`` says the same. ``shutdown_grace``
    (seconds; None: no limit) is how long a stop waits for responses still
    being sent (an event stream never ends by itself) before cutting them off.
    """

    def __init__(
        self,
        app: Any,
        listeners: list[socket.socket],
        *,
        limits: ConnectionLimits | None = None,
        on_ready: Callable[[], None] | None = None,
        shutdown_grace: int | None = None,
    ) -> None:
        import uvicorn

        self.listeners = listeners
        config = uvicorn.Config(
            app,
            http=_guarded_protocol(limits or ConnectionLimits()),
            ws="none",
            lifespan="on",
            log_level="warning",
            timeout_graceful_shutdown=shutdown_grace,
        )
        self._server = _announcing_server(config, on_ready)

    @property
    def started(self) -> bool:
        """True once the app has started and the sockets accept connections."""
        return self._server.started

    def run(self) -> None:
        """Serve until stopped; the listeners are closed afterwards."""
        try:
            self._server.run(sockets=self.listeners)
        finally:
            for listener in self.listeners:
                listener.close()

    def stop(self) -> None:
        """Ask the server to finish (from any thread); ``run`` returns once it has."""
        self._server.should_exit = True


def _announcing_server(config: uvicorn.Config, on_ready: Callable[[], None] | None) -> uvicorn.Server:
    """A uvicorn server that calls ``on_ready`` once started."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit and on_ready is not None:
                on_ready()

    return AnnouncingServer(config)


def _guarded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the deadlines and the cap of ``limits`` (one class per server)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    # Connections part-way through sending a request, oldest first (shared by this server's connections).
    unfinished: OrderedDict[GuardedH11Protocol, None] = OrderedDict()

    class GuardedH11Protocol(H11Protocol):
        _phase: str | None = None
        _timer: asyncio.TimerHandle | None = None
        _heard: bool = False  # some bytes of the request being waited for have arrived

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._watch()

        def data_received(self, data: bytes) -> None:
            self._heard = True
            super().data_received(data)
            self._watch()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._set_phase(None)
            super().connection_lost(exc)

        def _watch(self) -> None:
            """Start, keep or stop the deadline as the request moves from head to body to handled."""
            if self.transport.is_closing():
                self._set_phase(None)
            elif self.conn.their_state is h11.IDLE:
                self._set_phase("head")
            elif self.conn.their_state is h11.SEND_BODY:
                self._set_phase("body")
            else:
                self._set_phase(None)

        def _set_phase(self, phase: str | None) -> None:
            if phase == self._phase:
                return  # a deadline, not an idle timer: more bytes do not move it
            if phase == "head":
                self._heard = False  # a new request: nothing of it has arrived yet
            self._phase = phase
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if phase is None:
                unfinished.pop(self, None)
                return
            timeout = limits.header_timeout if phase == "head" else limits.body_timeout
            self._timer = self.loop.call_later(timeout, self._expire, timeout)
            if self not in unfinished:
                while len(unfinished) >= limits.max_unfinished:
                    oldest = next(iter(unfinished))
                    oldest._drop(503, "the server has too many connections still sending their requests")
                unfinished[self] = None

        def _expire(self, timeout: float) -> None:
            self._timer = None
            what = "head" if self._phase == "head" else "body"
            self._drop(408, f"the request {what} did not arrive within {timeout:g} s")

        def _drop(self, status: int, reason: str) -> None:
            """Answer ``status`` to a request begun but not answered, then close the connection.

            A connection that has sent nothing of a request (new, or kept alive
            after a response) is closed without a word, as a kept-alive
            connection's idle timeout would.
            """
            if self._phase == "head":
                answer = self._heard
            else:
                answer = self.cycle is None or not self.cycle.response_started
            self._set_phase(None)
            if self.transport.is_closing():
                return
            if answer:
                body = reason.encode("utf-8") + b"\n"
                phrase = "Request Timeout" if status == 408 else "Service Unavailable"
                head = (
                    f"HTTP/1.1 {status} {phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
                    f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
                )
                self.transport.write(head.encode("ascii") + body)
            self.transport.close()

    return GuardedH11Protocol
