"""What every page of ``memrouter ui`` shares: the router, the templates, the CSRF token, who acts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memrouter.ui.security import new_secret

if TYPE_CHECKING:
    import jinja2
    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.router import Router
    from memrouter.ui.gitview import GitView

__all__ = ["NAV", "UiContext"]

NAV = (
    ("/", "Search"), ("/new", "New"), ("/review", "Review"), ("/team", "Team"), ("/graph", "Graph"), ("/timeline", "Timeline"),
    ("/health", "Health"),
)  # fmt: skip


@dataclass
class UiContext:
    """What every page needs: the router, the templates, the CSRF token, who acts."""

    router: Router
    env: jinja2.Environment
    reviewer: str | None
    git: GitView
    csrf: str = field(default_factory=new_secret)
    poll_ms: int = 2000
    streams: int = 0  # server-sent event streams open now (``events``)
    base: str = ""  # the path the pages live under: "" alone, "/p/<key>" among several projects (``multi``)
    project: str | None = None  # the project's key among several

    def render(self, template: str, here: str = "", **values: Any) -> str:
        """``template`` rendered to text with the shared values."""
        nav = [(self.base + href, label) for href, label in NAV]
        return self.env.get_template(template).render(
            nav=nav, here=here, csrf=self.csrf, reviewer=self.reviewer, poll_ms=self.poll_ms, base=self.base,
            project=self.project, **values,
        )  # fmt: skip

    def page(self, request: Request, template: str, http_status: int = 200, **values: Any) -> Response:
        """``template`` rendered as a full page (or a fragment: templates decide)."""
        from starlette.responses import HTMLResponse

        body = self.render(template, request.url.path, **values)
        return HTMLResponse(body, status_code=http_status, headers={"cache-control": "no-store"})
