"""The team channel's tables in PostgreSQL (migration ``0003_team_channel``), one set for every project.

Each base table (``team_agents``, ``team_tasks``, ...) holds a ``project``
column; the team channel never names them. It reads and writes the views of
schema ``memrouter_team`` (``agents``, ``tasks``, ...), which show the rows of
the project named by the transaction's ``memrouter.project`` setting, fill
that project in on insert, and refuse (``WITH CASCADED CHECK OPTION``) a row
of any other. ``memrouter.team.pgstore`` sets the project and the schema at
the start of every transaction: the one place a team statement is scoped.
Unset, the views show nothing and take nothing.
"""

from __future__ import annotations

__all__ = ["TEAM_PLACES_SQL", "TEAM_SCHEMA", "TEAM_SQL", "TEAM_TABLES", "TEAM_VIEWS"]

TEAM_SCHEMA = "memrouter_team"
_PROJECT = "project text NOT NULL COLLATE \"C\" DEFAULT current_setting('memrouter.project', true)"

# view name -> (columns after ``project``, the primary key's columns after ``project``)
TEAM_TABLES: dict[str, tuple[str, str]] = {
    "workflows": (
        'id text NOT NULL COLLATE "C", name text NOT NULL, owner text, state text NOT NULL, '
        "started_at double precision NOT NULL, completed_at double precision, summary text, log text",
        "id",
    ),
    "agents": (
        'id text NOT NULL COLLATE "C", workflow_id text, capabilities text NOT NULL, status text NOT NULL, '
        "message text, registered_at double precision NOT NULL, heartbeat_at double precision NOT NULL, "
        "ttl double precision NOT NULL",
        "id",
    ),
    "variables": (
        'key text NOT NULL COLLATE "C", value text NOT NULL, version bigint NOT NULL, owner text, '
        "workflow_id text, updated_at double precision NOT NULL, expires_at double precision",
        "key",
    ),
    "tasks": (
        'seq bigint GENERATED ALWAYS AS IDENTITY, id text NOT NULL COLLATE "C", workflow_id text, '
        "title text NOT NULL, payload text, priority integer NOT NULL, requires text NOT NULL, state text NOT NULL, "
        "owner text, agent text, lease_expires_at double precision, attempts integer NOT NULL, "
        "max_attempts integer NOT NULL, result text, error text, created_at double precision NOT NULL, "
        "updated_at double precision NOT NULL",
        "id",
    ),
    "task_deps": ('task_id text NOT NULL COLLATE "C", depends_on text NOT NULL COLLATE "C"', "task_id, depends_on"),
    "handoffs": (
        'id text NOT NULL COLLATE "C", workflow_id text, from_agent text NOT NULL, to_agent text NOT NULL, '
        "context text NOT NULL, task_id text, state text NOT NULL, created_at double precision NOT NULL, "
        "responded_at double precision, reason text",
        "id",
    ),
    "reservations": (
        'id text NOT NULL COLLATE "C", workflow_id text, agent text NOT NULL, paths text NOT NULL, '
        "exclusive integer NOT NULL, reason text, created_at double precision NOT NULL, "
        "expires_at double precision NOT NULL",
        "id",
    ),
}
TEAM_VIEWS = tuple(TEAM_TABLES)

_INDEXES = """
CREATE INDEX team_agents_workflow ON team_agents (project, workflow_id);
CREATE INDEX team_variables_workflow ON team_variables (project, workflow_id);
CREATE INDEX team_tasks_queue ON team_tasks (project, state, priority DESC, seq);
CREATE INDEX team_tasks_lease ON team_tasks (project, state, lease_expires_at);
CREATE INDEX team_tasks_workflow ON team_tasks (project, workflow_id);
CREATE INDEX team_handoffs_to ON team_handoffs (project, to_agent, state);
CREATE INDEX team_handoffs_workflow ON team_handoffs (project, workflow_id);
CREATE INDEX team_reservations_agent ON team_reservations (project, agent);
CREATE INDEX team_reservations_workflow ON team_reservations (project, workflow_id);
"""


def _names(columns: str) -> str:
    return ", ".join(column.split()[0] for column in columns.split(", ") if not column[0].isupper())


def _view(view: str, names: str, verb: str = "CREATE") -> str:
    return (
        f"{verb} VIEW {TEAM_SCHEMA}.{view} AS SELECT {names} FROM public.team_{view} "
        "WHERE project = current_setting('memrouter.project', true) WITH CASCADED CHECK OPTION;"
    )


def _team_sql() -> str:
    statements = [f"CREATE SCHEMA {TEAM_SCHEMA};"]
    for view, (columns, key) in TEAM_TABLES.items():
        statements.append(f"CREATE TABLE team_{view} ({_PROJECT}, {columns}, PRIMARY KEY (project, {key}));")
        statements.append(_view(view, _names(columns)))
    return "\n".join(statements) + _INDEXES


def _places_sql() -> str:
    """Migration ``0009_team_places``: each agent's branch and worktree, and those a handoff's sender had."""
    statements = []
    for view in ("agents", "handoffs"):
        statements.append(f"ALTER TABLE team_{view} ADD COLUMN branch text, ADD COLUMN worktree text;")
        statements.append(_view(view, f"{_names(TEAM_TABLES[view][0])}, branch, worktree", "CREATE OR REPLACE"))
    return "\n".join(statements)


TEAM_SQL = _team_sql()
TEAM_PLACES_SQL = _places_sql()
