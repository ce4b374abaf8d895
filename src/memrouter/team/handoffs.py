"""Handoffs: pending -> accepted | rejected, answered only by the receiving agent.

Accepting a handoff that names a task the sender holds moves that claim
(and a fresh lease of the same length) to the receiver.
"""

from __future__ import annotations

import json
from typing import Any

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.team.agents import live_agent, touch
from memrouter.team.checks import check_agent_id, check_id, check_plain_text, encode, new_id
from memrouter.team.records import DEFAULT_LEASE, Handoff
from memrouter.team.sql import Conn, Row
from memrouter.team.tasks import get_task
from memrouter.team.workflows import check_room

__all__ = ["create", "get_handoff", "pending", "respond", "row_to_handoff"]

MAX_REASON_CHARS = 2000


def row_to_handoff(row: Row) -> Handoff:
    return Handoff(
        id=row["id"], from_agent=row["from_agent"], to_agent=row["to_agent"], context=json.loads(row["context"]),
        task_id=row["task_id"], state=row["state"], workflow_id=row["workflow_id"], created_at=row["created_at"],
        responded_at=row["responded_at"], reason=row["reason"], branch=row["branch"], worktree=row["worktree"],
    )  # fmt: skip


def get_handoff(conn: Conn, handoff_id: str) -> Handoff:
    check_id(handoff_id, "handoff id")
    row = conn.execute("SELECT * FROM handoffs WHERE id = ?", (handoff_id,)).fetchone()
    if row is None:
        raise NotFound(f"no handoff {handoff_id!r}")
    return row_to_handoff(row)


def create(conn: Conn, now: float, from_agent: str, to_agent: str, context: Any, task_id: str | None) -> Handoff:
    """Offer work to ``to_agent``, which must be registered and not stale; the handoff carries the sender's branch
    and worktree as registered, so the receiver knows where the work and its memories are."""
    check_agent_id(from_agent, "from_agent")
    check_agent_id(to_agent, "to_agent")
    if from_agent == to_agent:
        raise InvalidInput("an agent cannot hand work off to itself")
    text = encode(context, "the context")
    sender = touch(conn, now, from_agent)
    live_agent(conn, now, to_agent, "receiving agent")
    if task_id is not None:
        get_task(conn, task_id)
    check_room(conn, sender.workflow_id)
    handoff_id = new_id()
    conn.execute(
        "INSERT INTO handoffs (id, workflow_id, from_agent, to_agent, context, task_id, state, created_at, branch, "
        "worktree) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
        (handoff_id, sender.workflow_id, from_agent, to_agent, text, task_id, now, sender.branch, sender.worktree),
    )
    return get_handoff(conn, handoff_id)


def respond(conn: Conn, now: float, handoff_id: str, agent_id: str, accept: bool, reason: str | None) -> Handoff:
    check_agent_id(agent_id)
    check_plain_text(reason, "the reason", limit=MAX_REASON_CHARS, required=False)
    handoff = get_handoff(conn, handoff_id)
    if handoff.to_agent != agent_id:
        raise InvalidInput(
            f"only the receiving agent {handoff.to_agent!r} may accept or reject handoff {handoff_id}, not {agent_id!r}"
        )
    if handoff.state != "pending":
        raise Conflict(f"handoff {handoff_id} was already {handoff.state}")
    touch(conn, now, agent_id)
    state = "accepted" if accept else "rejected"
    conn.execute(
        "UPDATE handoffs SET state = ?, responded_at = ?, reason = ? WHERE id = ?", (state, now, reason, handoff_id)
    )
    if accept and handoff.task_id is not None:
        task = conn.execute("SELECT * FROM tasks WHERE id = ?", (handoff.task_id,)).fetchone()
        if task is not None and task["state"] == "claimed" and task["agent"] == handoff.from_agent:
            held = (
                max(task["lease_expires_at"] - task["updated_at"], 1.0) if task["lease_expires_at"] else DEFAULT_LEASE
            )
            conn.execute(
                "UPDATE tasks SET agent = ?, lease_expires_at = ?, updated_at = ? WHERE id = ?",
                (agent_id, now + held, now, handoff.task_id),
            )
    return get_handoff(conn, handoff_id)


def pending(conn: Conn, agent_id: str) -> tuple[Handoff, ...]:
    check_agent_id(agent_id)
    rows = conn.execute(
        "SELECT * FROM handoffs WHERE to_agent = ? AND state = 'pending' ORDER BY created_at, id", (agent_id,)
    )
    return tuple(row_to_handoff(row) for row in rows.fetchall())
