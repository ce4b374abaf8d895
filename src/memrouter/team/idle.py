"""Workflows nobody works on any more: the team records the janitor proposes to clear.

A workflow's records (agents, variables, tasks, handoffs, reservations) are
cleared when it completes. A workflow that is never completed keeps them for
ever: its agents go stale, its claimed tasks return to the queue, and its
variables stay readable. ``idle_workflows`` finds the active workflows with
no activity since a cutoff: none of their records written, no heartbeat, no
task or handoff change. Completing one (``Team.workflow_complete``) clears
its records and keeps the compact log, as a normal completion does.
"""

from __future__ import annotations

from memrouter.team.records import IdleWorkflow
from memrouter.team.sql import Conn
from memrouter.team.workflows import TABLES

__all__ = ["idle_workflows"]

# The newest moment each table records for a row of a workflow.
_ACTIVITY = {
    "agents": "CASE WHEN heartbeat_at > registered_at THEN heartbeat_at ELSE registered_at END",
    "variables": "updated_at",
    "tasks": "updated_at",
    "handoffs": "coalesce(responded_at, created_at)",
    "reservations": "created_at",
}


def idle_workflows(conn: Conn, cutoff: float) -> list[IdleWorkflow]:
    """The active workflows whose last activity is before ``cutoff`` (oldest first)."""
    found = []
    for row in conn.execute("SELECT id, name, owner, started_at FROM workflows WHERE state = 'active'").fetchall():
        last, records = float(row["started_at"]), {}
        for table in TABLES:
            count, newest = conn.execute(
                f"SELECT count(*), max({_ACTIVITY[table]}) FROM {table} WHERE workflow_id = ?", (row["id"],)
            ).fetchone()
            records[table] = count
            last = max(last, newest if newest is not None else last)
        if last < cutoff:
            found.append(IdleWorkflow(row["id"], row["name"], row["owner"], row["started_at"], last, records))
    return sorted(found, key=lambda workflow: (workflow.last_activity, workflow.id))
