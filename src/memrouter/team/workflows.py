"""Workflows: start one, complete it (clearing its coordination records), count its records."""

from __future__ import annotations

import json
from typing import Any

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.team.checks import check_id, check_plain_text, new_id
from memrouter.team.records import MAX_WORKFLOW_RECORDS, Workflow, WorkflowReport
from memrouter.team.sql import Conn, Row

__all__ = ["active_workflow", "check_room", "complete", "get_workflow", "start"]

MAX_SUMMARY_CHARS = 20_000
# The tables whose rows belong to a workflow (``workflow_id``), cleared when it completes.
TABLES = ("agents", "variables", "tasks", "handoffs", "reservations")


def _row(row: Row) -> Workflow:
    return Workflow(
        id=row["id"], name=row["name"], owner=row["owner"], state=row["state"], started_at=row["started_at"],
        completed_at=row["completed_at"], summary=row["summary"],
    )  # fmt: skip


def get_workflow(conn: Conn, workflow_id: str) -> Workflow:
    check_id(workflow_id, "workflow id")
    row = conn.execute("SELECT * FROM workflows WHERE id = ?", (workflow_id,)).fetchone()
    if row is None:
        raise NotFound(f"no workflow {workflow_id!r}")
    return _row(row)


def active_workflow(conn: Conn, workflow_id: str) -> Workflow:
    workflow = get_workflow(conn, workflow_id)
    if workflow.state != "active":
        raise Conflict(f"workflow {workflow_id} is {workflow.state}; start a new one")
    return workflow


def check_room(conn: Conn, workflow_id: str | None, adding: int = 1) -> None:
    """Refuse a record that would take the workflow past ``MAX_WORKFLOW_RECORDS``."""
    if workflow_id is None:
        return
    count = sum(
        conn.execute(f"SELECT count(*) FROM {table} WHERE workflow_id = ?", (workflow_id,)).fetchone()[0]
        for table in TABLES
    )
    if count + adding > MAX_WORKFLOW_RECORDS:
        raise InvalidInput(
            f"workflow {workflow_id} holds {count} records; at most {MAX_WORKFLOW_RECORDS} (complete it or start another)"
        )


def start(conn: Conn, now: float, name: str, owner: str | None) -> Workflow:
    check_plain_text(name, "a workflow name", limit=200)
    workflow_id = new_id()
    conn.execute(
        "INSERT INTO workflows (id, name, owner, state, started_at) VALUES (?, ?, ?, 'active', ?)",
        (workflow_id, name, owner, now),
    )
    return get_workflow(conn, workflow_id)


def complete(conn: Conn, now: float, workflow_id: str, summary: str | None, retain_logs: bool) -> WorkflowReport:
    """Clear the workflow's records; keep a compact log (ids and states, no payloads) if ``retain_logs``.

    The summary is returned, not escalated: turning it into a sprint memory
    is the channels' ``escalate``, which the caller may run with it.
    """
    check_plain_text(summary, "the summary", limit=MAX_SUMMARY_CHARS, required=False)
    active_workflow(conn, workflow_id)
    log: dict[str, Any] | None = None
    if retain_logs:
        log = {
            "agents": [row[0] for row in conn.execute("SELECT id FROM agents WHERE workflow_id = ? ORDER BY id", (workflow_id,))],
            "tasks": [
                {"id": r["id"], "state": r["state"], "attempts": r["attempts"], "agent": r["agent"]}
                for r in conn.execute("SELECT id, state, attempts, agent FROM tasks WHERE workflow_id = ? ORDER BY seq", (workflow_id,))
            ],
            "handoffs": [
                {"id": r["id"], "from": r["from_agent"], "to": r["to_agent"], "state": r["state"], "task_id": r["task_id"]}
                for r in conn.execute(
                    "SELECT id, from_agent, to_agent, state, task_id FROM handoffs WHERE workflow_id = ? ORDER BY created_at",
                    (workflow_id,),
                )
            ],
        }  # fmt: skip
    conn.execute(
        "DELETE FROM task_deps WHERE task_id IN (SELECT id FROM tasks WHERE workflow_id = ?)", (workflow_id,)
    )  # fmt: skip
    cleared = {
        table: conn.execute(f"DELETE FROM {table} WHERE workflow_id = ?", (workflow_id,)).rowcount for table in TABLES
    }
    conn.execute(
        "UPDATE workflows SET state = 'completed', completed_at = ?, summary = ?, log = ? WHERE id = ?",
        (now, summary, json.dumps(log, separators=(",", ":")) if log is not None else None, workflow_id),
    )
    return WorkflowReport(workflow=get_workflow(conn, workflow_id), summary=summary, cleared=cleared, log=log)
