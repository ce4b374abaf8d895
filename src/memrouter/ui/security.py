"""The web UI's guards: who may ask (the token rule of ``serve --http``), what a page may run, forged writes.

- **Token.** Bound to loopback the UI needs no token, but every request must
  name a loopback host (``Host: 127.0.0.1:8766``), so a web page elsewhere
  cannot reach it through DNS rebinding. Off loopback a token is required
  (``server.serve_ui`` refuses to start without one) and every request must
  carry it: ``Authorization: Bearer <token>``, the ``memrouter_ui`` cookie
  (the token percent-encoded, so any token fits in it),
  or once, ``?token=<token>`` on a GET, which sets the cookie and redirects
  to the same page without it. Compared in constant time; else 401.
- **Headers.** A Content-Security-Policy allowing scripts, styles and
  images from the UI itself only (no inline script runs, even if one got
  into a page), no framing, no referrer, no MIME sniffing.
- **CSRF.** Every POST must carry the app's random ``csrf`` form field
  (rendered into its forms; a page elsewhere cannot read it); else 403.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode

from memrouter.http.serve import is_loopback

__all__ = ["COOKIE", "CSP", "TOKEN_SCOPE_KEY", "UiGuard", "cookie_value", "new_secret", "same_secret"]

COOKIE = "memrouter_ui"
# Where the guard leaves the token it accepted, for the app behind it (``multi``: which projects it grants).
TOKEN_SCOPE_KEY = "memrouter.ui.token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def new_secret() -> str:
    """A fresh random token (CSRF, or a generated access token)."""
    return secrets.token_urlsafe(32)


def same_secret(given: str | None, expected: str) -> bool:
    """``given`` equals ``expected``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _host_name(host_header: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8766`` -> ``::1``)."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def cookie_value(headers: dict[bytes, bytes], name: str) -> str | None:
    """The value of cookie ``name``, percent-decoded (``_redirect_without_token`` encodes it)."""
    for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return unquote(value)
    return None


class UiGuard:
    """ASGI middleware: the token rule and the security headers (see the module docstring)."""

    def __init__(self, app: Any, token: str | None, *, verify: Callable[[str], bool] | None = None) -> None:
        """``token``: the one token; or ``verify``, which says whether a token is one of several (both None:
        loopback only, no token)."""
        if token is not None and not token.strip():
            raise ValueError("the token must not be empty")
        self.app = app
        self.token = token
        self._verify = verify if verify is not None else (None if token is None else self._is_token)

    def _is_token(self, given: str) -> bool:
        assert self.token is not None
        return same_secret(given, self.token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        accepted = self._accepted(scope, headers) if self._verify is not None else None
        refusal = self._refusal(headers, accepted)
        if refusal is not None:
            await _plain(send, *refusal)
            return
        if self._verify is not None:
            scope[TOKEN_SCOPE_KEY] = accepted
        if self._verify is not None and scope["method"] == "GET":
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            given = next((value for key, value in query if key == "token"), None)
            if given is not None and (given == accepted or self._verify(given)):
                await self._redirect_without_token(scope, query, given, send)
                return

        async def secured(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)

    def _refusal(self, headers: dict[bytes, bytes], accepted: str | None) -> tuple[int, str] | None:
        """Why this request is refused (status, message), or None; ``accepted``: ``_accepted``'s answer."""
        if self._verify is None:
            host = headers.get(b"host", b"").decode("latin-1")
            if not is_loopback(_host_name(host)):
                return 400, "this UI answers requests for a loopback host only (open it at http://127.0.0.1:<port>/)"
            return None
        if accepted is not None:
            return None
        if headers.get(b"authorization", b"").startswith(b"Bearer "):
            return 401, "this token is not accepted"
        return 401, "this UI needs its token: open it once with ?token=<token>, or send Authorization: Bearer <token>"

    def _accepted(self, scope: dict[str, Any], headers: dict[bytes, bytes]) -> str | None:
        """The token the request carries, if accepted: a Bearer header (a wrong one is not saved by a cookie),
        else the cookie, else ``?token=`` on a GET."""
        verify = self._verify
        assert verify is not None
        bearer = headers.get(b"authorization", b"").decode("latin-1")
        if bearer.startswith("Bearer "):
            return bearer[7:] if verify(bearer[7:]) else None
        cookie = cookie_value(headers, COOKIE)
        if cookie is not None and verify(cookie):
            return cookie
        given = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"))).get("token")
        return given if scope["method"] == "GET" and given is not None and verify(given) else None

    async def _redirect_without_token(
        self, scope: dict[str, Any], query: list[tuple[str, str]], token: str, send: Any
    ) -> None:
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        location = scope.get("path", "/") + (f"?{rest}" if rest else "")
        # Percent-encoded: a token may hold ``;``, ``,``, spaces or quotes, which would end or split the cookie.
        cookie = f"{COOKIE}={quote(token, safe='')}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode("utf-8")), (b"set-cookie", cookie.encode()), *_HEADERS],
            }
        )
        await send({"type": "http.response.body", "body": b""})


async def _plain(send: Any, status: int, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memrouter"'))
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *_HEADERS]})
    await send({"type": "http.response.body", "body": body})
