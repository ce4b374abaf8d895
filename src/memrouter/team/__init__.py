"""The team channel: live coordination between agents, in ``.memrouter/team.sqlite``.

Workflows, agents with heartbeats, shared variables with compare-and-set,
a task queue with leases, handoffs and path reservations; see ``Team``.
Live state lasting hours, never in git, and separate from the index (an
index rebuild never touches it).
"""

from __future__ import annotations

from memrouter.team.records import (
    AGENT_STATUSES,
    HANDOFF_STATES,
    TASK_STATES,
    Agent,
    AgentState,
    Clock,
    Handoff,
    IdleWorkflow,
    ManualClock,
    Reservation,
    ReservationConflict,
    ReservationResult,
    SystemClock,
    Task,
    TeamState,
    Variable,
    Workflow,
    WorkflowReport,
)
from memrouter.team.team import Team

__all__ = [
    "AGENT_STATUSES",
    "HANDOFF_STATES",
    "TASK_STATES",
    "Agent",
    "AgentState",
    "Clock",
    "Handoff",
    "IdleWorkflow",
    "ManualClock",
    "Reservation",
    "ReservationConflict",
    "ReservationResult",
    "SystemClock",
    "Task",
    "Team",
    "TeamState",
    "Variable",
    "Workflow",
    "WorkflowReport",
]
