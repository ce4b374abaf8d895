"""Agents: registration, heartbeats, staleness (an agent silent past its TTL is stale)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.team.checks import check_agent_id, check_names, check_plain_text, check_seconds
from memrouter.team.records import AGENT_STATUSES, Agent
from memrouter.team.sql import Conn, Row
from memrouter.team.workflows import active_workflow, check_room

__all__ = ["register", "heartbeat", "get_agent", "live_agent", "touch", "stale_agent_ids", "row_to_agent"]

MAX_MESSAGE_CHARS = 2000
MAX_PLACE_CHARS = 4096  # a branch name or a worktree's folder


def row_to_agent(row: Row, now: float) -> Agent:
    return Agent(
        id=row["id"], capabilities=tuple(json.loads(row["capabilities"])), status=row["status"],
        message=row["message"], workflow_id=row["workflow_id"], registered_at=row["registered_at"],
        heartbeat_at=row["heartbeat_at"], ttl=row["ttl"], stale=row["heartbeat_at"] + row["ttl"] <= now,
        branch=row["branch"], worktree=row["worktree"],
    )  # fmt: skip


def register(
    conn: Conn,
    now: float,
    agent_id: str,
    capabilities: Iterable[str] | None,
    workflow: str | None,
    ttl: float,
    branch: str | None = None,
    worktree: str | None = None,
) -> Agent:
    """Register (or re-register) an agent; its heartbeat is now and its status idle. ``branch`` and ``worktree``:
    where it works (its checkout's branch and worktree folder), shown in the roster and carried by its handoffs."""
    check_agent_id(agent_id)
    names = check_names(capabilities, "capabilities")
    check_seconds(ttl, "ttl")
    check_plain_text(branch, "branch", limit=MAX_PLACE_CHARS, required=False)
    check_plain_text(worktree, "worktree", limit=MAX_PLACE_CHARS, required=False)
    if workflow is not None:
        active_workflow(conn, workflow)
        old = conn.execute("SELECT workflow_id FROM agents WHERE id = ?", (agent_id,)).fetchone()
        if old is None or old["workflow_id"] != workflow:
            check_room(conn, workflow)
    # An update, else an insert (not ON CONFLICT, which PostgreSQL's per-project views cannot take); the
    # caller's transaction holds the project's write lock, so no other registration comes in between.
    updated = conn.execute(
        "UPDATE agents SET workflow_id = ?, capabilities = ?, status = 'idle', message = NULL, heartbeat_at = ?, "
        "ttl = ?, branch = ?, worktree = ? WHERE id = ?",
        (workflow, json.dumps(names), now, ttl, branch, worktree, agent_id),
    ).rowcount
    if not updated:
        conn.execute(
            "INSERT INTO agents (id, workflow_id, capabilities, status, message, registered_at, heartbeat_at, ttl, "
            "branch, worktree) VALUES (?, ?, ?, 'idle', NULL, ?, ?, ?, ?, ?)",
            (agent_id, workflow, json.dumps(names), now, now, ttl, branch, worktree),
        )
    return get_agent(conn, now, agent_id)


def heartbeat(conn: Conn, now: float, agent_id: str, status: str, message: str | None) -> Agent:
    """Record that the agent is alive, with its status and an optional message."""
    check_agent_id(agent_id)
    if status not in AGENT_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(AGENT_STATUSES)}, not {str(status)[:40]!r}")
    check_plain_text(message, "message", limit=MAX_MESSAGE_CHARS, required=False)
    cursor = conn.execute(
        "UPDATE agents SET status = ?, message = ?, heartbeat_at = ? WHERE id = ?", (status, message, now, agent_id)
    )
    if cursor.rowcount == 0:
        raise NotFound(f"no agent {agent_id!r} is registered (register it first)")
    return get_agent(conn, now, agent_id)


def get_agent(conn: Conn, now: float, agent_id: str, what: str = "agent") -> Agent:
    row = conn.execute("SELECT * FROM agents WHERE id = ?", (agent_id,)).fetchone()
    if row is None:
        raise NotFound(f"no {what} {agent_id!r} is registered (register it first)")
    return row_to_agent(row, now)


def live_agent(conn: Conn, now: float, agent_id: str, what: str = "agent") -> Agent:
    """The agent, which must be registered and not stale."""
    agent = get_agent(conn, now, check_agent_id(agent_id, f"{what} id"), what)
    if agent.stale:
        raise Conflict(
            f"{what} {agent_id!r} is stale: no heartbeat for {now - agent.heartbeat_at:.0f} s (its TTL is {agent.ttl:.0f} s)"
        )
    return agent


def touch(conn: Conn, now: float, agent_id: str) -> Agent:
    """The acting agent (registered), whose heartbeat every operation it makes renews.

    The row is rewritten only when the heartbeat is older than a fiftieth of
    the TTL: a page written less per operation on the busy path.
    """
    check_agent_id(agent_id)
    row = conn.execute("SELECT * FROM agents WHERE id = ?", (agent_id,)).fetchone()
    if row is None:
        raise NotFound(f"no agent {agent_id!r} is registered (register it first)")
    if now - row["heartbeat_at"] > row["ttl"] / 50:
        row = conn.execute("UPDATE agents SET heartbeat_at = ? WHERE id = ? RETURNING *", (now, agent_id)).fetchone()
    return row_to_agent(row, now)


def stale_agent_ids(conn: Conn, now: float) -> list[str]:
    return [row[0] for row in conn.execute("SELECT id FROM agents WHERE heartbeat_at + ttl <= ?", (now,))]
