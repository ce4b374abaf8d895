"""The Starlette app of ``memrouter ui``: routes, error pages, the shared page context.

Every page reads through public Router calls; every write (approve, reject)
goes through the same guarded Router calls as the CLI and MCP, acting as
the person running the UI, with the ``expected_hash`` conflict check.
Library errors become error pages: bad input 400, not found 404, a conflict
409, a backend 502, an unusable index 503; a form without the CSRF token 403
(``security``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import (
    EXIT_BACKEND,
    EXIT_STORAGE,
    EXIT_USAGE,
    Conflict,
    MemoryRouterError,
    NotFound,
    exit_code_for,
)  # fmt: skip
from memrouter.ui.context import UiContext
from memrouter.ui.security import UiGuard

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.router import Router

__all__ = ["STATIC", "UiContext", "create_app"]

STATIC = Path(__file__).parent / "static"


def _status_for(error: MemoryRouterError) -> int:
    """The HTTP status of a library error, after the CLI's exit codes (``errors.exit_code_for``)."""
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, Conflict):
        return 409
    code = exit_code_for(error)
    return {EXIT_USAGE: 400, EXIT_BACKEND: 502, EXIT_STORAGE: 503}.get(code, 500)


def asset_version() -> str:
    """A short hash of the shipped static files: their URLs carry it, so a browser may cache them for long."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(STATIC.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _long_cached(app: Any) -> Any:
    """``app`` with its successful answers cacheable for a day (the URLs change when the files do)."""

    async def cached(scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def send_cached(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                message["headers"] = [*message.get("headers", []), (b"cache-control", b"public, max-age=86400")]
            await send(message)

        await app(scope, receive, send_cached)

    return cached


def create_app(
    router: Router,
    *,
    token: str | None = None,
    reviewer: str | None = None,
    project: str | None = None,
    guarded: bool = True,
) -> Any:
    """The ASGI app over ``router``: the pages, behind the token rule and security headers (``UiGuard``).

    ``reviewer`` is who approves and rejects (``user:<name>``); None: those
    writes answer 400 saying how to set it. ``project``: the app is one of
    several, its pages under ``/p/<project>``, and ``guarded`` False leaves
    the guard to the app that holds them all (``multi``).
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from memrouter.ui import actions, events, live, pages
    from memrouter.ui.gitview import GitView
    from memrouter.ui.render import environment

    ui = UiContext(router, environment(), reviewer, GitView(router.config.root), project=project)
    if project is not None:
        ui.base = f"/p/{project}"
    ui.env.globals["asset_version"] = asset_version()

    def bound(handler: Callable[[UiContext, Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            return handler(ui, request)

        return endpoint

    def bound_post(handler: Callable[[UiContext, Request, dict[str, str]], Response]) -> Any:
        async def endpoint(request: Request) -> Response:
            from starlette.concurrency import run_in_threadpool

            form = await actions.read_form(ui, request)
            return await run_in_threadpool(handler, ui, request, form)

        return endpoint

    async def team_events(request: Request) -> Response:
        return await events.team_events(ui, request)

    routes = [
        Route("/", bound(pages.search)),
        Route("/memory/{name:path}", bound(pages.memory)),
        Route("/graph", bound(pages.graph)),
        Route("/graph/drawing", bound(pages.graph_drawing)),
        Route("/review", bound(actions.review)),
        Route("/review/approve", bound_post(actions.approve), methods=["POST"]),
        Route("/review/reject", bound_post(actions.reject), methods=["POST"]),
        Route("/sprint/promote", bound_post(actions.promote), methods=["POST"]),
        Route("/sprint/archive", bound_post(actions.archive), methods=["POST"]),
        Route("/edit/{name:path}", bound(actions.edit_form)),
        Route("/edit", bound_post(actions.edit), methods=["POST"]),
        Route("/new", bound(actions.new_form)),
        Route("/new", bound_post(actions.new), methods=["POST"]),
        Route("/team", bound(live.team)),
        Route("/team/live", bound(live.team_live)),
        Route("/team/events", team_events),
        Route("/timeline", bound(live.timeline)),
        Route("/health", bound(live.health)),
        Mount("/static", _long_cached(StaticFiles(directory=STATIC)), name="static"),
    ]

    def library_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, MemoryRouterError)
        status = _status_for(exc)
        return ui.page(request, "error.html", status, title=f"Error {status}", message=str(exc))

    def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return ui.page(request, "error.html", exc.status_code, title=f"Error {exc.status_code}", message=exc.detail)

    app = Starlette(routes=routes, exception_handlers={MemoryRouterError: library_error, HTTPException: http_error})
    return UiGuard(app, token) if guarded else app
