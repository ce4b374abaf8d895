"""The web UI over several projects (``memrouter ui --projects FILE``): one app, each project under ``/p/<key>``.

The projects file is the one ``memrouter serve --projects`` reads (its
repositories and tokens; ``memrouter.config.projects``). Every request needs a
token of that file, at any address: ``Authorization: Bearer``, the
``memrouter_ui`` cookie, or once ``?token=`` (``security.UiGuard``). The
start page lists the projects the token may use; a project it may not use
answers 403 (the same whether or not the project exists), and a project it
may only read refuses every POST with 403. Each project opens on its first
request with its own Router and pages (``app.create_app`` with
``project=key``), all sharing the database when one is configured.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from memrouter.core.errors import MemoryRouterError
from memrouter.ui.app import STATIC, _long_cached
from memrouter.ui.security import TOKEN_SCOPE_KEY, UiGuard

__all__ = ["Access", "ProjectPages", "create_multi_app"]


class Access(Protocol):
    """A token's projects: those it may use and those of them it may also change."""

    @property
    def projects(self) -> frozenset[str]: ...

    @property
    def writable(self) -> frozenset[str]: ...


@dataclass
class ProjectPages:
    """One project's Router and its pages, opened on first use."""

    router: Any
    app: Any


class _Projects:
    """The projects' pages, each opened once (thread-safe), closed together."""

    def __init__(self, keys: frozenset[str], open_pages: Callable[[str], ProjectPages]) -> None:
        self.keys = keys
        self._open = open_pages
        self._opened: dict[str, ProjectPages] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> ProjectPages:
        with self._lock:
            if key not in self._opened:
                self._opened[key] = self._open(key)
            return self._opened[key]

    def close(self) -> None:
        with self._lock:
            opened, self._opened = list(self._opened.values()), {}
        for pages in opened:
            pages.router.close()


def create_multi_app(
    keys: frozenset[str],
    grant_for: Callable[[bytes], Access | None],
    open_pages: Callable[[str], ProjectPages],
) -> tuple[Any, Callable[[], None]]:
    """The app over ``keys`` (see the module docstring), and a function that closes every opened project."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    projects = _Projects(keys, open_pages)

    def access(scope: Mapping[str, Any]) -> Access | None:
        secret = scope.get(TOKEN_SCOPE_KEY)  # the guard in front checked it
        return grant_for(secret.encode("utf-8")) if isinstance(secret, str) else None

    def start(request: Request) -> Response:
        granted = access(request.scope)
        mine = sorted(granted.projects & keys) if granted is not None else []
        items = "".join(
            f'<li><a href="/p/{quote(key)}/">{html.escape(key)}</a>'
            + ("" if granted is not None and key in granted.writable else " (read only)")
            + "</li>"
            for key in mine
        )
        body = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Projects · memrouter</title>'
            '<link rel="stylesheet" href="/static/ui.css"></head><body><main id="main"><h1>Projects</h1>'
            f"<ul>{items or '<li>This token may use no project.</li>'}</ul></main></body></html>"
        )
        return HTMLResponse(body, headers={"cache-control": "no-store"})

    async def project(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        from starlette.concurrency import run_in_threadpool

        key = str(scope.get("path_params", {}).get("key", ""))
        granted = access(scope)
        if granted is None or key not in granted.projects or key not in keys:
            refused: Response = PlainTextResponse("this token may not use that project\n", status_code=403)
        elif scope.get("method") not in ("GET", "HEAD") and key not in granted.writable:
            refused = PlainTextResponse(f"this token may only read project {key}\n", status_code=403)
        else:
            try:
                pages = await run_in_threadpool(projects.get, key)
            except (MemoryRouterError, OSError) as exc:
                refused = PlainTextResponse(f"project {key} cannot open: {exc}\n", status_code=503)
            else:
                await pages.app(scope, receive, send)
                return
        await refused(scope, receive, send)

    routes = [
        Route("/", start),
        Mount("/static", _long_cached(StaticFiles(directory=STATIC)), name="static"),
        Mount("/p/{key}", app=project),
    ]
    app = Starlette(routes=routes)

    def verify(secret: str) -> bool:
        return grant_for(secret.encode("utf-8")) is not None

    return UiGuard(app, None, verify=verify), projects.close
