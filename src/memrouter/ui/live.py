"""The pages about now: the team board (refreshed without a reload), the timeline and sprint, health."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from memrouter.ui.params import field

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.ui.context import UiContext

__all__ = ["board_fragment", "health", "team", "team_live", "timeline"]

TIMELINE_LINES = 200


def _board(ui: UiContext) -> dict[str, Any]:
    state = ui.router.team().get_team_state()
    handoffs = [handoff for agent in state.agents for handoff in agent.pending_handoffs]
    return {"state": state, "handoffs": handoffs}


def team(ui: UiContext, request: Request) -> Response:
    """Agents with heartbeat age, claimed tasks with lease countdowns, handoffs, reservations."""
    return ui.page(request, "team.html", title="Team board", **_board(ui))


def team_live(ui: UiContext, request: Request) -> Response:
    """The board alone, as a fragment the team page fetches every ``poll_ms`` when server-sent events fail."""
    return ui.page(request, "team_board.html", **_board(ui))


def board_fragment(ui: UiContext) -> str:
    """The board's HTML fragment, as ``/team/events`` sends it."""
    return ui.render("team_board.html", **_board(ui))


def timeline(ui: UiContext, request: Request) -> Response:
    """Memory changes over time from the audit log (newest first), and the current sprint's board."""
    name = field(request, "name")
    entries = list(reversed(ui.router.audit(name=name, limit=TIMELINE_LINES)))
    changes = [entry for entry in entries if entry.name is not None]
    sprint = ui.router.lifecycle.status()[0].get("current")
    members: list[Any] = []
    days_left = None
    if sprint:
        folder = f"sprints/{sprint['id']}/"
        members = [m for m in ui.router.list(prefix=folder) if not m.name.endswith("/_sprint")]
        today = datetime.fromtimestamp(ui.router.clock(), UTC).date()
        days_left = (date.fromisoformat(sprint["end"]) - today).days
    return ui.page(
        request, "timeline.html", entries=changes, sprint=sprint, members=members, days_left=days_left, name=name,
        commits=ui.git.memory_commits(), title="Timeline",
    )  # fmt: skip


def health(ui: UiContext, request: Request) -> Response:
    """Index freshness and counts, external services up or down, warnings; janitor proposals on request."""
    status = ui.router.status()
    janitor = ui.router.janitor(apply=False) if field(request, "janitor", ("1",)) else None
    return ui.page(request, "health.html", status=status, janitor=janitor, title="Health")
