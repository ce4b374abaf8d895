"""Running the UI: bind first, then serve the app on uvicorn until stopped (``memrouter ui``)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from memrouter.core.errors import MemoryRouterError

if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.router import Router

__all__ = ["DEFAULT_PORT", "serve_ui", "serve_ui_projects"]

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766
SHUTDOWN_GRACE = 2  # seconds a stop waits for open team-board event streams


def serve_ui(
    root: str | Path | None = None,
    index_dir: str | Path | None = None,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the UI over one Router until the process is stopped.

    The rule of ``serve --http``: off loopback only with ``token``. The
    address is bound before anything else (ConfigError if it cannot be);
    ``on_ready`` gets the page's address once requests are answered.
    """
    from memrouter.http.serve import HttpServer, bind_listeners, require_token_off_loopback
    from memrouter.ops.audit import git_user
    from memrouter.router import Router
    from memrouter.ui.app import create_app

    require_token_off_loopback(host, token, serving="serving the UI", credential="a token")
    listeners = bind_listeners(host, port)
    try:
        router = Router.open(root=root, index_dir=index_dir, watch=True)
    except BaseException:
        for listener in listeners:
            listener.close()
        raise
    try:
        bound = listeners[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        address = f"http://{shown}:{bound}/" + (f"?{urlencode({'token': token})}" if token else "")
        # Bring the index up to date while uvicorn starts and the browser connects, not on the first search.
        threading.Thread(target=_warm, args=(router,), name="memrouter-ui-warm", daemon=True).start()
        reviewer = git_user(router.config.project_dir or router.config.root)
        app = create_app(router, token=token, reviewer=reviewer)
        ready = (lambda: on_ready(address)) if on_ready else None
        HttpServer(app, listeners, on_ready=ready, shutdown_grace=SHUTDOWN_GRACE).run()
    finally:
        router.close()


def serve_ui_projects(
    projects_file: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the UI over every repository of a ``serve --projects`` file (``ui.multi``) until stopped.

    The file is read and checked, and every project's configuration loaded,
    before the address is bound; a token of the file is needed at any address.
    """
    from memrouter.config.projects import load_projects
    from memrouter.http.serve import HttpServer, bind_listeners
    from memrouter.index.postgres.shared import SharedDatabases
    from memrouter.ops.audit import git_user
    from memrouter.router import Router
    from memrouter.ui.app import create_app
    from memrouter.ui.multi import ProjectPages, create_multi_app

    served = load_projects(projects_file)
    for key in served.projects:  # a repository's bad memrouter.toml stops the UI before it listens
        served.config(key)
    listeners = bind_listeners(host, port)
    databases = SharedDatabases()  # one pool per database URL, however many projects open

    def open_pages(key: str) -> ProjectPages:
        router = Router(served.config(key), watch=True, databases=databases)
        try:
            threading.Thread(target=_warm, args=(router,), name=f"memrouter-ui-warm-{key}", daemon=True).start()
            reviewer = git_user(router.config.project_dir or router.config.root)
            return ProjectPages(router, create_app(router, reviewer=reviewer, project=key, guarded=False))
        except BaseException:
            router.close()
            raise

    app, close = create_multi_app(frozenset(served.projects), served.grant_for, open_pages)
    try:
        bound = listeners[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        address = f"http://{shown}:{bound}/"
        ready = (lambda: on_ready(address)) if on_ready else None
        HttpServer(app, listeners, on_ready=ready, shutdown_grace=SHUTDOWN_GRACE).run()
    finally:
        close()
        for listener in listeners:
            listener.close()
        databases.close()


def _warm(router: Router) -> None:
    """Refresh the index and run one lexical search (what the first page would otherwise wait for)."""
    try:
        router.status()
        router.search("warm", 1, "lexical")
    except (MemoryRouterError, sqlite3.Error) as exc:
        log.warning("initial index refresh failed: %s", exc)
