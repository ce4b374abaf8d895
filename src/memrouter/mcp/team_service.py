"""What the team MCP tools do, in plain Python: the agent id they act as, and JSON-ready answers.

The acting agent is, in order: the server's pinned agent (``memrouter serve
--agent NAME``; a different id in an argument is refused), the tool's
``agent_id`` argument, or the name the MCP client gave in its client info.
The team channel is opened on the first team tool call, so a server used
only for memories never creates ``team.sqlite``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.repo.common import checkout_place_of
from memrouter.team import Team

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from memrouter.config.settings import Config
    from memrouter.core.model import Memory

    Escalate = Callable[..., Memory]

__all__ = ["TeamService"]


class TeamService:
    """The team tools over one ``Team`` (see the module docstring)."""

    def __init__(
        self,
        index_dir: Path,
        *,
        pinned_agent: str | None = None,
        write_wait: float = 30.0,
        config: Config | None = None,
    ) -> None:
        """``config``: open the channel as the project configures it (PostgreSQL with ``[index] url``)."""
        self.index_dir = index_dir
        self.config = config
        self.pinned_agent = pinned_agent
        self.write_wait = write_wait
        self._team: Team | None = None
        self._lock = threading.Lock()

    @property
    def team(self) -> Team:
        with self._lock:
            if self._team is None:
                if self.config is not None:
                    self._team = Team.for_config(self.config)
                else:
                    self._team = Team.open(self.index_dir, write_wait=self.write_wait)
            return self._team

    def close(self) -> None:
        with self._lock:
            if self._team is not None:
                self._team.close()
                self._team = None

    def agent(self, given: str | None, client_name: str | None) -> str:
        """The acting agent's id (see the module docstring)."""
        if self.pinned_agent is not None:
            if given is not None and given != self.pinned_agent:
                raise InvalidInput(f"this server acts as agent {self.pinned_agent!r}; it cannot act as {given!r}")
            return self.pinned_agent
        if given:
            return given
        if client_name:
            return client_name
        raise InvalidInput("say which agent you are: pass agent_id (or start the server with --agent NAME)")

    def register(
        self, agent: str, capabilities: list[str] | None, workflow: str | None, worktree: str | None = None
    ) -> dict[str, Any]:
        """Register ``agent`` with the branch and worktree git reports for ``worktree`` (a folder of the agent's
        checkout; default: this server's project)."""
        place = checkout_place_of(worktree, self.project_folder)
        return self.team.register(
            agent, capabilities or (), workflow, branch=place.branch if place else None,
            worktree=str(place.worktree) if place else None,
        ).to_dict()  # fmt: skip

    @property
    def project_folder(self) -> Path:
        """The folder of the project this server serves (its checkout)."""
        if self.config is not None:
            return self.config.project_dir or self.config.root
        return self.index_dir.parent

    def heartbeat(self, agent: str, status: str, message: str | None) -> dict[str, Any]:
        return self.team.heartbeat(agent, status, message).to_dict()

    def state(self, agent: str | None) -> dict[str, Any]:
        return self.team.get_team_state(agent).to_dict()

    def set(self, agent: str, key: str, value: Any, expected_version: int | None, ttl: float | None) -> dict[str, Any]:
        return self.team.team_set(key, value, expected_version, ttl, agent_id=agent).to_dict()

    def get(self, key: str) -> dict[str, Any]:
        return self.team.team_get(key).to_dict()

    def task_add(
        self, agent: str | None, title: str, payload: Any, priority: int, depends_on: list[str] | None
    ) -> dict[str, Any]:
        return self.team.task_add(title, payload, priority, depends_on or (), agent_id=agent).to_dict()

    def task_claim(self, agent: str, lease_seconds: float) -> dict[str, Any]:
        task = self.team.task_claim(agent, lease_seconds)
        return {"task": task.to_dict() if task else None}

    def task_complete(self, agent: str, task_id: str, result: Any) -> dict[str, Any]:
        return self.team.task_complete(task_id, result, agent_id=agent).to_dict()

    def handoff(self, agent: str, to_agent: str, context: Any, task_id: str | None) -> dict[str, Any]:
        return self.team.handoff(agent, to_agent, context, task_id).to_dict()

    def handoff_respond(self, agent: str, handoff_id: str, accept: bool, reason: str | None) -> dict[str, Any]:
        if accept:
            return self.team.handoff_accept(handoff_id, agent).to_dict()
        return self.team.handoff_reject(handoff_id, agent, reason).to_dict()

    def reserve(
        self, agent: str, paths: list[str], exclusive: bool, ttl_seconds: float, reason: str | None
    ) -> dict[str, Any]:
        return self.team.reserve(agent, paths, exclusive, ttl_seconds, reason).to_dict()

    def release(self, agent: str, reservation_ids: list[str] | None) -> dict[str, Any]:
        return {"released": [r.to_dict() for r in self.team.release(agent, reservation_ids)]}

    def workflow_complete(
        self, agent: str | None, workflow_id: str, summary: str | None, escalate: Escalate | None = None
    ) -> dict[str, Any]:
        """Complete the workflow; ``escalate`` (``Router.escalate``) keeps its summary as a sprint note."""
        if escalate is not None and not (summary or "").strip():
            raise InvalidInput("escalating a workflow needs its summary: what it found")
        report = self.team.workflow_complete(workflow_id, summary, agent_id=agent).to_dict()
        data = {"id": workflow_id, **report}
        if escalate is not None:
            from memrouter.ops.escalation import workflow_context

            context = workflow_context(workflow_id, report)
            data["escalated_to"] = escalate(str(summary), context, author=f"agent:{agent}" if agent else None).name
        return data
