"""The task queue: priorities, dependencies, leases, attempts, parking.

A claim takes the highest-priority queued task whose dependencies are done
(and whose required capabilities the agent has) inside one ``BEGIN
IMMEDIATE`` transaction on SQLite, or with the row locked ``FOR UPDATE SKIP
LOCKED`` on PostgreSQL (``sql.ready_task``), so exactly one agent gets it. Before each claim,
leases that expired and leases held by stale agents go back to the queue,
each counted in the task's attempts; a task out of attempts is parked for a
person instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.core.records import replace
from memrouter.team.agents import stale_agent_ids, touch
from memrouter.team.checks import check_id, check_int, check_names, check_plain_text, check_seconds, encode, new_id
from memrouter.team.records import TASK_STATES, Task
from memrouter.team.sql import Conn, Row, is_postgres, ready_task
from memrouter.team.workflows import active_workflow, check_room

__all__ = ["add", "claim", "complete", "counts", "fail", "get_task", "list_tasks", "reclaim_expired", "renew"]

MAX_TITLE_CHARS = 500
MAX_ERROR_CHARS = 4000
MAX_DEPENDENCIES = 100
MAX_PRIORITY = 1_000_000
# Requeued on expiry while attempts are left, else parked.
_RETURN_OR_PARK = (
    "state = CASE WHEN attempts >= max_attempts THEN 'parked' ELSE 'queued' END, "
    "error = CASE WHEN attempts >= max_attempts THEN ? ELSE error END, "
    "agent = NULL, lease_expires_at = NULL, updated_at = ?"
)


def row_to_task(conn: Conn, row: Row) -> Task:
    deps = tuple(r[0] for r in conn.execute("SELECT depends_on FROM task_deps WHERE task_id = ?", (row["id"],)))
    return Task(
        id=row["id"], title=row["title"], payload=json.loads(row["payload"]) if row["payload"] else None,
        priority=row["priority"], state=row["state"], depends_on=deps, requires=tuple(json.loads(row["requires"])),
        workflow_id=row["workflow_id"], owner=row["owner"], agent=row["agent"],
        lease_expires_at=row["lease_expires_at"], attempts=row["attempts"], max_attempts=row["max_attempts"],
        result=json.loads(row["result"]) if row["result"] else None, error=row["error"],
        created_at=row["created_at"], updated_at=row["updated_at"],
    )  # fmt: skip


def get_task(conn: Conn, task_id: str) -> Task:
    check_id(task_id, "task id")
    row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None:
        raise NotFound(f"no task {task_id!r}")
    return row_to_task(conn, row)


def add(
    conn: Conn,
    now: float,
    title: str,
    payload: Any,
    priority: int,
    depends_on: Iterable[str],
    requires: Iterable[str] | None,
    workflow: str | None,
    owner: str | None,
    max_attempts: int,
) -> Task:
    check_plain_text(title, "a task title", limit=MAX_TITLE_CHARS)
    payload_text = encode(payload, "the payload") if payload is not None else None
    check_int(priority, "priority", low=-MAX_PRIORITY, high=MAX_PRIORITY)
    check_int(max_attempts, "max_attempts", low=1, high=100)
    if isinstance(depends_on, str):
        raise InvalidInput("depends_on must be a list of task ids")
    deps = tuple(dict.fromkeys(check_id(dep, "a dependency") for dep in depends_on))
    if len(deps) > MAX_DEPENDENCIES:
        raise InvalidInput(f"a task may depend on at most {MAX_DEPENDENCIES} tasks")
    needs = check_names(requires, "required capabilities")
    if owner is not None:
        agent = touch(conn, now, owner)
        workflow = workflow if workflow is not None else agent.workflow_id
    if workflow is not None:
        active_workflow(conn, workflow)
        check_room(conn, workflow)
    for dep in deps:
        if conn.execute("SELECT 1 FROM tasks WHERE id = ?", (dep,)).fetchone() is None:
            raise NotFound(f"no task {dep!r} to depend on")
    task_id = new_id()
    conn.execute(
        "INSERT INTO tasks (id, workflow_id, title, payload, priority, requires, state, owner, attempts, "
        "max_attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, 0, ?, ?, ?)",
        (task_id, workflow, title, payload_text, priority, json.dumps(needs), owner, max_attempts, now, now),
    )
    conn.executemany("INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)", [(task_id, d) for d in deps])
    return get_task(conn, task_id)


def reclaim_expired(conn: Conn, now: float) -> int:
    """Return expired leases, and leases of stale agents, to the queue (or park them); how many."""
    parked = "its lease expired on its last attempt"
    count: int = conn.execute(
        f"UPDATE tasks SET {_RETURN_OR_PARK} WHERE state = 'claimed' AND lease_expires_at <= ?", (parked, now, now)
    ).rowcount
    stale = stale_agent_ids(conn, now)
    if stale:
        marks = ",".join("?" * len(stale))
        count += conn.execute(
            f"UPDATE tasks SET {_RETURN_OR_PARK} WHERE state = 'claimed' AND agent IN ({marks})",
            ("its agent went stale on its last attempt", now, *stale),
        ).rowcount
    return count


def claim(
    conn: Conn,
    now: float,
    agent_id: str,
    lease: float,
    capabilities: Iterable[str] | None,
    task_id: str | None = None,
) -> Task | None:
    """The claimed task (``task_id`` only, when given), or None when none is ready for this agent."""
    check_seconds(lease, "lease_seconds")
    if task_id is not None:
        get_task(conn, task_id)
    agent = touch(conn, now, agent_id)
    have = set(agent.capabilities if capabilities is None else check_names(capabilities, "capabilities"))
    reclaim_expired(conn, now)
    chosen = ready_task(conn, have, task_id)
    if chosen is None:
        return None
    row = conn.execute(
        "UPDATE tasks SET state = 'claimed', agent = ?, lease_expires_at = ?, attempts = attempts + 1, "
        "updated_at = ? WHERE id = ? RETURNING *",
        (agent_id, now + lease, now, chosen),
    ).fetchone()
    return row_to_task(conn, row)


def _held(conn: Conn, now: float, task_id: str, agent_id: str | None) -> Task:
    """The task, which must be claimed (by ``agent_id`` when given) with a lease still running.

    On PostgreSQL the row is locked first, so a claim's return of expired
    leases (or another completion) waits for this change, and the task is read as it is now.
    """
    if is_postgres(conn):
        conn.execute("SELECT 1 FROM tasks WHERE id = ? FOR UPDATE", (check_id(task_id, "task id"),))
    task = get_task(conn, task_id)
    if task.state != "claimed":
        raise Conflict(f"task {task_id} is {task.state}, not claimed")
    if agent_id is not None and task.agent != agent_id:
        raise Conflict(f"task {task_id} is claimed by {task.agent!r}, not {agent_id!r}")
    if task.lease_expires_at is not None and task.lease_expires_at <= now:
        raise Conflict(f"the lease on task {task_id} expired; it goes back to the queue")
    if agent_id is not None:
        touch(conn, now, agent_id)
    return task


def renew(conn: Conn, now: float, task_id: str, agent_id: str | None, lease: float) -> Task:
    check_seconds(lease, "lease_seconds")
    _held(conn, now, task_id, agent_id)
    conn.execute("UPDATE tasks SET lease_expires_at = ?, updated_at = ? WHERE id = ?", (now + lease, now, task_id))
    return get_task(conn, task_id)


def complete(conn: Conn, now: float, task_id: str, agent_id: str | None, result: Any) -> Task:
    text = encode(result, "the result") if result is not None else None
    task = _held(conn, now, task_id, agent_id)
    conn.execute(
        "UPDATE tasks SET state = 'done', result = ?, lease_expires_at = NULL, updated_at = ? WHERE id = ?",
        (text, now, task_id),
    )
    done = json.loads(text) if text is not None else None
    return replace(task, state="done", result=done, lease_expires_at=None, updated_at=now)


def fail(conn: Conn, now: float, task_id: str, agent_id: str | None, error: str, retry: bool) -> Task:
    """Give the task up: back to the queue while attempts are left and ``retry``, else parked or failed."""
    check_plain_text(error, "the error", limit=MAX_ERROR_CHARS)
    task = _held(conn, now, task_id, agent_id)
    state = "failed" if not retry else ("parked" if task.attempts >= task.max_attempts else "queued")
    conn.execute(
        "UPDATE tasks SET state = ?, error = ?, agent = CASE WHEN ? = 'queued' THEN NULL ELSE agent END, "
        "lease_expires_at = NULL, updated_at = ? WHERE id = ?",
        (state, error, state, now, task_id),
    )
    return get_task(conn, task_id)


def list_tasks(conn: Conn, states: Iterable[str] | None, workflow: str | None, limit: int) -> tuple[Task, ...]:
    wanted = tuple(states or ())
    for state in wanted:
        if state not in TASK_STATES:
            raise InvalidInput(f"a task state is one of {', '.join(TASK_STATES)}, not {str(state)[:40]!r}")
    clauses, params = [], []
    if wanted:
        clauses.append(f"state IN ({','.join('?' * len(wanted))})")
        params += list(wanted)
    if workflow is not None:
        clauses.append("workflow_id = ?")
        params.append(check_id(workflow, "workflow id"))
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(f"SELECT * FROM tasks {where} ORDER BY priority DESC, seq LIMIT ?", (*params, limit))
    return tuple(row_to_task(conn, row) for row in rows.fetchall())


def counts(conn: Conn) -> dict[str, int]:
    found = dict(conn.execute("SELECT state, count(*) FROM tasks GROUP BY state").fetchall())
    return {state: int(found.get(state, 0)) for state in TASK_STATES}
