"""The team channel's records, its clock, its lists of states and its limits.

Every public call of ``memrouter.team`` returns one of these frozen records;
``to_dict()`` gives the JSON shape the CLI and the MCP server print.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

__all__ = [
    "AGENT_STATUSES",
    "TASK_STATES",
    "HANDOFF_STATES",
    "MAX_VALUE_BYTES",
    "MAX_WORKFLOW_RECORDS",
    "DEFAULT_AGENT_TTL",
    "DEFAULT_LEASE",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_RESERVATION_TTL",
    "Clock",
    "SystemClock",
    "ManualClock",
    "Agent",
    "AgentState",
    "Handoff",
    "IdleWorkflow",
    "Reservation",
    "ReservationConflict",
    "ReservationResult",
    "Task",
    "TeamState",
    "Variable",
    "Workflow",
    "WorkflowReport",
]

# The one list of each; the CLI, the MCP server and the docs use these.
AGENT_STATUSES = ("idle", "working", "blocked", "done")
# queued -> claimed -> done | queued (failed or lease expired, attempts left) | parked (for a person) | failed
TASK_STATES = ("queued", "claimed", "done", "parked", "failed")
HANDOFF_STATES = ("pending", "accepted", "rejected")

MAX_VALUE_BYTES = 64 * 1024  # a variable's value, a payload, a result, a handoff's context (UTF-8 JSON)
MAX_WORKFLOW_RECORDS = 10_000  # agents, variables, tasks, handoffs and reservations of one workflow
DEFAULT_AGENT_TTL = 600.0  # seconds without a heartbeat before an agent is stale
DEFAULT_LEASE = 600.0
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_RESERVATION_TTL = 3600.0


class Clock(Protocol):
    """Where the team channel's time comes from: seconds since the epoch."""

    def __call__(self) -> float: ...


class SystemClock:
    """The real clock (``time.time``)."""

    def __call__(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to, so tests control leases and expiry."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _plain(value: Any) -> Any:
    if isinstance(value, _Record):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}  # type: ignore[arg-type]
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


class _Record:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (nested records become dicts, tuples lists)."""
        data: dict[str, Any] = _plain(self)
        return data


@dataclass(frozen=True, slots=True)
class Workflow(_Record):
    """A unit of team work; completing it clears the coordination records made in it."""

    id: str
    name: str
    owner: str | None
    state: str  # active | completed
    started_at: float
    completed_at: float | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class WorkflowReport(_Record):
    """What ``workflow_complete`` did: the records cleared, by table, and the log kept (ids, no payloads)."""

    workflow: Workflow
    summary: str | None
    cleared: dict[str, int]
    log: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class IdleWorkflow(_Record):
    """An active workflow with no activity since ``last_activity``, and how many records it holds, by table."""

    id: str
    name: str
    owner: str | None
    started_at: float
    last_activity: float
    records: dict[str, int]


@dataclass(frozen=True, slots=True)
class Agent(_Record):
    """An agent's registration and its last heartbeat; ``stale`` once the heartbeat is older than ``ttl``."""

    id: str
    capabilities: tuple[str, ...]
    status: str
    message: str | None
    workflow_id: str | None
    registered_at: float
    heartbeat_at: float
    ttl: float
    stale: bool
    branch: str | None = None  # the branch of the agent's checkout (None: detached, or not said)
    worktree: str | None = None  # the top folder of the agent's git worktree


@dataclass(frozen=True, slots=True)
class Variable(_Record):
    """A shared value; ``version`` grows by one on every write (compare-and-set)."""

    key: str
    value: Any
    version: int
    owner: str | None
    workflow_id: str | None
    updated_at: float
    expires_at: float | None


@dataclass(frozen=True, slots=True)
class Task(_Record):
    """A queued piece of work; a claim is a lease held by ``agent`` until ``lease_expires_at``."""

    id: str
    title: str
    payload: Any
    priority: int
    state: str
    depends_on: tuple[str, ...]
    requires: tuple[str, ...]
    workflow_id: str | None
    owner: str | None
    agent: str | None
    lease_expires_at: float | None
    attempts: int
    max_attempts: int
    result: Any
    error: str | None
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class Handoff(_Record):
    """Work passed from one agent to another: pending, then accepted or rejected by the receiver."""

    id: str
    from_agent: str
    to_agent: str
    context: Any
    task_id: str | None
    state: str
    workflow_id: str | None
    created_at: float
    responded_at: float | None
    reason: str | None
    branch: str | None = None  # the sender's branch when it handed the work off: where the work and its memories are
    worktree: str | None = None  # the sender's worktree then


@dataclass(frozen=True, slots=True)
class Reservation(_Record):
    """An agent's claim on paths (globs relative to the repository) until ``expires_at``."""

    id: str
    agent: str
    paths: tuple[str, ...]
    exclusive: bool
    reason: str | None
    workflow_id: str | None
    created_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class ReservationConflict(_Record):
    """One of the asked globs (``path``) may overlap another agent's live reservation."""

    path: str
    other_path: str
    agent: str
    reservation_id: str
    exclusive: bool
    expires_at: float


@dataclass(frozen=True, slots=True)
class ReservationResult(_Record):
    """A reservation granted, or the conflicts that kept it from being granted (nothing is stored then)."""

    granted: bool
    reservation: Reservation | None
    conflicts: tuple[ReservationConflict, ...] = ()

    @property
    def id(self) -> str | None:
        return self.reservation.id if self.reservation else None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = _plain(self)
        data["id"] = self.id
        return data


@dataclass(frozen=True, slots=True)
class AgentState(_Record):
    """One agent as ``get_team_state`` sees it: its status, live claims and reservations, pending handoffs."""

    agent: Agent
    claims: tuple[Task, ...]
    reservations: tuple[Reservation, ...]
    pending_handoffs: tuple[Handoff, ...]


@dataclass(frozen=True, slots=True)
class TeamState(_Record):
    """Everyone's (or one agent's) state at ``at``, and how many tasks are in each state."""

    at: float
    agents: tuple[AgentState, ...]
    tasks: dict[str, int] = field(default_factory=dict)
