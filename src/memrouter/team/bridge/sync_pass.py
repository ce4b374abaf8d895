"""One sync pass between memrouter's team channel and claude-flow: what both sides hold, and its report.

A pass reads both sides once (memrouter's tasks and team state, claude-flow's
tasks and claims), then each step (``tasks_sync``, ``values_sync``) writes
only what differs, so a pass over converged sides writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import MemoryRouterError
from memrouter.team.bridge.client import Claim, ClaudeFlowClient, RemoteTask, claimant
from memrouter.team.bridge.ledger import Ledger

if TYPE_CHECKING:
    from memrouter.team import Team
    from memrouter.team.records import Task, TeamState

__all__ = ["Pass", "SyncReport", "PROXY_PREFIX", "digest", "remote_priority", "local_priority"]

PROXY_PREFIX = "claude-flow:"
PROXY_TTL = 600.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]")


@dataclass
class SyncReport:
    """What one pass did: writes to claude-flow, changes made in memrouter, conflicts left for a person."""

    up: bool = True
    writes: int = 0
    imported: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "up": self.up, "writes": self.writes, "imported": self.imported, "conflicts": self.conflicts,
            "errors": self.errors, "error": self.error,
        }  # fmt: skip


@dataclass
class Pass:
    """Both sides as read at the start of a pass."""

    team: Team
    client: ClaudeFlowClient
    ledger: Ledger
    workflow: str | None
    report: SyncReport
    state: TeamState
    tasks: dict[str, Task]
    remote_tasks: dict[str, RemoteTask]
    claims: dict[str, Claim]
    proxies: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, team: Team, client: ClaudeFlowClient, ledger: Ledger, workflow: str | None) -> Pass:
        """Both sides now. A configured workflow that is no longer active is left out (its records are gone)."""
        report = SyncReport()
        if workflow is not None:
            try:
                active = team.workflow(workflow).state == "active"
            except MemoryRouterError as exc:
                active, reason = False, str(exc)
            else:
                reason = f"workflow {workflow} is not active"
            if not active:
                report.errors.append(f"{reason}: claude-flow's tasks and agents join no workflow ([team.claude_flow])")
                workflow = None
        state = team.get_team_state()
        tasks = {task.id: task for task in team.task_list(["queued", "claimed", "done"], workflow=workflow)}
        remote = {task.id: task for task in client.tasks()}
        claims = {claim.issue: claim for claim in client.claims()}
        return cls(team, client, ledger, workflow, report, state, tasks, remote, claims)

    def claimant_of(self, agent_id: str) -> str:
        """claude-flow's name for a memrouter agent (a proxy stands for its claude-flow claimant)."""
        if agent_id.startswith(PROXY_PREFIX):
            entry = self.ledger.get("proxy", agent_id)
            if entry is not None and entry[0]:
                return entry[0]
        return claimant(agent_id)

    def proxy_for(self, holder: str, holder_type: str) -> str:
        """The memrouter agent standing for a claude-flow claimant, registered (or kept alive) now."""
        proxy = PROXY_PREFIX + _UNSAFE.sub("-", holder)[:100]
        if proxy in self.proxies:
            return proxy
        self.proxies.add(proxy)
        live = {a.agent.id for a in self.state.agents if not a.agent.stale}
        if proxy not in live:
            self.team.register(proxy, ["claude-flow"], self.workflow, ttl=PROXY_TTL)
            self.state = self.team.get_team_state()
        else:
            self.team.heartbeat(proxy, "working")
        self.ledger.put("proxy", proxy, claimant(holder, holder_type), None)
        return proxy

    def conflict(self, text: str) -> None:
        self.report.conflicts.append(text)


def digest(value: Any) -> str:
    """A hash of a JSON value as claude-flow would give it back (strings holding JSON are parsed)."""
    return hashlib.sha256(json.dumps(_normal(value), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _normal(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def remote_priority(priority: int) -> str:
    if priority < 0:
        return "low"
    if priority == 0:
        return "normal"
    return "critical" if priority >= 10 else "high"


def local_priority(priority: str) -> int:
    return {"low": -1, "high": 5, "critical": 10}.get(priority, 0)
