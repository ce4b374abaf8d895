"""``memrouter team``: the team channel from the command line (a thin face over ``memrouter.team``).

With ``--format json`` every command prints one JSON object; created and
claimed things carry an ``id`` field. Other tools script against these
forms, so they stay stable.
"""

from __future__ import annotations

import json
from typing import Any

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state
from memrouter.core.errors import Conflict, InvalidInput

AGENT = click.option("--agent", "agent", required=True, help="The acting agent's id.")
OPTIONAL_AGENT = click.option("--agent", "agent", default=None, help="The acting agent's id (recorded as the owner).")


def _team(state: State) -> Any:
    from memrouter.config.settings import Config
    from memrouter.team import Team

    config = Config.load(root=state.root, index_dir=state.index_dir)
    return Team.for_config(config)


def _json(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{what} must be JSON ({exc.msg} at character {exc.pos})") from exc


def _task_line(task: dict[str, Any]) -> str:
    holder = f" by {task['agent']}" if task["agent"] else ""
    return f"{task['id']}  {task['state']:<8} p{task['priority']:<3} {task['title']}{holder}"


@click.group()
def team() -> None:
    """Coordinate agents: status, tasks, handoffs, shared values, reservations, workflows."""


@team.command()
@click.option("--agent", default=None, help="Only this agent.")
@FORMAT
@pass_state
@handle_errors
def status(state: State, agent: str | None, fmt: str) -> None:
    """Agents, their status, claims, reservations and pending handoffs (and claude-flow's board, when configured)."""
    from memrouter.cli.team_bridge import external_board

    with _team(state) as channel:
        data = channel.get_team_state(agent).to_dict()
        board = external_board(state, channel)
    if board is not None:
        data["claude_flow"] = board

    def text() -> str:
        lines = [f"{'agent':<16} {'status':<8} {'claims':>6} {'paths':>5} {'handoffs':>8}  message"]
        for entry in data["agents"]:
            a = entry["agent"]
            status_text = "stale" if a["stale"] else a["status"]
            paths = sum(len(r["paths"]) for r in entry["reservations"])
            lines.append(
                f"{a['id']:<16} {status_text:<8} {len(entry['claims']):>6} {paths:>5} "
                f"{len(entry['pending_handoffs']):>8}  {a['message'] or ''}{where(a)}"
            )
        lines.append("tasks: " + ", ".join(f"{n} {s}" for s, n in data["tasks"].items()))
        if board is not None:
            from memrouter.cli.team_bridge import board_lines

            lines += board_lines(board)
        return "\n".join(lines)

    emit(fmt, data, text)


@team.command()
@click.argument("agent_id")
@click.option("--capability", "capabilities", multiple=True, help="A capability (repeatable).")
@click.option("--workflow", default=None, help="The workflow this agent works in.")
@click.option("--ttl", type=float, default=600.0, show_default=True, help="Seconds without a heartbeat before stale.")
@click.option(
    "--worktree",
    default=None,
    metavar="DIR",
    help="A folder of the agent's git checkout: its branch and worktree are recorded (default: this project's).",
)
@FORMAT
@pass_state
@handle_errors
def register(
    state: State, agent_id: str, capabilities: tuple[str, ...], workflow: str | None, ttl: float,
    worktree: str | None, fmt: str,
) -> None:  # fmt: skip
    """Register an agent (again: its capabilities are replaced), with the branch and worktree it works in."""
    from memrouter.config.settings import Config
    from memrouter.repo.common import checkout_place_of
    from memrouter.team import Team

    config = Config.load(root=state.root, index_dir=state.index_dir)
    place = checkout_place_of(worktree, config.project_dir or config.root)
    with Team.for_config(config) as channel:
        data = channel.register(
            agent_id, capabilities, workflow, ttl=ttl, branch=place.branch if place else None,
            worktree=str(place.worktree) if place else None,
        ).to_dict()  # fmt: skip
    emit(fmt, data, lambda: f"registered {data['id']}{where(data)}")


def where(record: dict[str, Any]) -> str:
    """`` (branch B, worktree W)`` for an agent or a handoff that says where it works, else nothing."""
    parts = [f"branch {record['branch']}" if record.get("branch") else "",
             f"worktree {record['worktree']}" if record.get("worktree") else ""]  # fmt: skip
    said = ", ".join(part for part in parts if part)
    return f" ({said})" if said else ""


@team.command()
@click.argument("agent_id")
@click.argument("status", type=click.Choice(["idle", "working", "blocked", "done"]))
@click.option("--message", default=None, help="What the agent is doing.")
@FORMAT
@pass_state
@handle_errors
def heartbeat(state: State, agent_id: str, status: str, message: str | None, fmt: str) -> None:
    """Say an agent is alive, with its status."""
    with _team(state) as channel:
        data = channel.heartbeat(agent_id, status, message).to_dict()
    emit(fmt, data, lambda: f"{data['id']}: {data['status']}")


# -- tasks --------------------------------------------------------------------
@team.group()
def task() -> None:
    """The task queue: add, claim, complete, fail, list."""


@task.command("add")
@click.argument("title")
@click.option("--priority", type=int, default=0, show_default=True, help="Higher is claimed first.")
@click.option("--depends-on", "depends_on", multiple=True, help="A task id that must be done first (repeatable).")
@click.option("--payload", default=None, help="JSON data for the agent that claims it.")
@click.option("--requires", multiple=True, help="A capability the claiming agent needs (repeatable).")
@click.option("--workflow", default=None, help="The workflow the task belongs to.")
@OPTIONAL_AGENT
@FORMAT
@pass_state
@handle_errors
def task_add(
    state: State, title: str, priority: int, depends_on: tuple[str, ...], payload: str | None,
    requires: tuple[str, ...], workflow: str | None, agent: str | None, fmt: str,
) -> None:  # fmt: skip
    """Queue a task."""
    with _team(state) as channel:
        data = channel.task_add(
            title, _json(payload, "--payload"), priority, depends_on, requires=requires, workflow=workflow,
            agent_id=agent,
        ).to_dict()  # fmt: skip
    emit(fmt, data, lambda: data["id"])


@task.command("claim")
@AGENT
@click.option("--lease", type=float, default=600.0, show_default=True, help="Seconds the claim lasts unless renewed.")
@FORMAT
@pass_state
@handle_errors
def task_claim(state: State, agent: str, lease: float, fmt: str) -> None:
    """Claim the best ready task; prints nothing (exit 0) when none is ready."""
    with _team(state) as channel:
        claimed = channel.task_claim(agent, lease_seconds=lease)
    if claimed is not None:
        data = claimed.to_dict()
        emit(fmt, data, lambda: _task_line(data))


@task.command("complete")
@click.argument("task_id")
@AGENT
@click.option("--result", default=None, help="JSON result.")
@FORMAT
@pass_state
@handle_errors
def task_complete(state: State, task_id: str, agent: str, result: str | None, fmt: str) -> None:
    """Mark a claimed task done."""
    with _team(state) as channel:
        data = channel.task_complete(task_id, _json(result, "--result"), agent_id=agent).to_dict()
    emit(fmt, data, lambda: _task_line(data))


@task.command("fail")
@click.argument("task_id")
@AGENT
@click.option("--error", "error", required=True, help="What went wrong.")
@click.option("--no-retry", is_flag=True, help="Do not queue it again.")
@FORMAT
@pass_state
@handle_errors
def task_fail(state: State, task_id: str, agent: str, error: str, no_retry: bool, fmt: str) -> None:
    """Give a claimed task up (queued again while attempts are left)."""
    with _team(state) as channel:
        data = channel.task_fail(task_id, error, not no_retry, agent_id=agent).to_dict()
    emit(fmt, data, lambda: _task_line(data))


@task.command("list")
@click.option("--state", "states", multiple=True, type=click.Choice(["queued", "claimed", "done", "parked", "failed"]))
@FORMAT
@pass_state
@handle_errors
def task_list(state: State, states: tuple[str, ...], fmt: str) -> None:
    """Tasks, best first."""
    with _team(state) as channel:
        found = [t.to_dict() for t in channel.task_list(states or None)]
    emit(fmt, {"tasks": found}, lambda: "\n".join(_task_line(t) for t in found))


# -- handoffs -----------------------------------------------------------------
@team.group(invoke_without_command=True)
@click.option("--from", "from_agent", default=None, help="The agent handing work off.")
@click.option("--to", "to_agent", default=None, help="The agent receiving it.")
@click.option("--context", default=None, help="JSON: what the receiver needs to know.")
@click.option("--task", "task_id", default=None, help="The task handed off (its claim moves on accept).")
@FORMAT
@click.pass_context
@handle_errors
def handoff(
    ctx: click.Context, from_agent: str | None, to_agent: str | None, context: str | None, task_id: str | None, fmt: str
) -> None:
    """Hand work to another agent (--from A --to B --context JSON), or answer one (accept|reject|pending)."""
    if ctx.invoked_subcommand is not None:
        return
    if not (from_agent and to_agent and context):
        raise InvalidInput("a handoff needs --from, --to and --context")
    state = ctx.find_object(State)
    assert state is not None
    with _team(state) as channel:
        data = channel.handoff(from_agent, to_agent, _json(context, "--context"), task_id).to_dict()
    emit(fmt, data, lambda: data["id"])


@handoff.command("accept")
@click.argument("handoff_id")
@AGENT
@FORMAT
@pass_state
@handle_errors
def handoff_accept(state: State, handoff_id: str, agent: str, fmt: str) -> None:
    """Accept a pending handoff (only its receiver may)."""
    with _team(state) as channel:
        data = channel.handoff_accept(handoff_id, agent).to_dict()
    emit(fmt, data, lambda: f"{data['id']} accepted")


@handoff.command("reject")
@click.argument("handoff_id")
@AGENT
@click.option("--reason", default=None, help="Why.")
@FORMAT
@pass_state
@handle_errors
def handoff_reject(state: State, handoff_id: str, agent: str, reason: str | None, fmt: str) -> None:
    """Reject a pending handoff (only its receiver may)."""
    with _team(state) as channel:
        data = channel.handoff_reject(handoff_id, agent, reason).to_dict()
    emit(fmt, data, lambda: f"{data['id']} rejected")


@handoff.command("pending")
@AGENT
@FORMAT
@pass_state
@handle_errors
def handoff_pending(state: State, agent: str, fmt: str) -> None:
    """Handoffs waiting for this agent, oldest first."""
    with _team(state) as channel:
        found = [h.to_dict() for h in channel.pending_handoffs(agent)]
    emit(fmt, {"handoffs": found}, lambda: "\n".join(f"{h['id']}  from {h['from_agent']}{where(h)}" for h in found))


# -- shared variables -----------------------------------------------------------
@team.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--expected-version", type=int, default=None, help="Only if the stored version is this (0: absent).")
@click.option("--ttl", type=float, default=None, help="Seconds until the value expires.")
@OPTIONAL_AGENT
@click.option("--workflow", default=None, help="The workflow the value belongs to.")
@FORMAT
@pass_state
@handle_errors
def set_(
    state: State, key: str, value: str, expected_version: int | None, ttl: float | None, agent: str | None,
    workflow: str | None, fmt: str,
) -> None:  # fmt: skip
    """Set a shared JSON value (compare-and-set with --expected-version)."""
    with _team(state) as channel:
        data = channel.team_set(
            key, _json(value, "VALUE"), expected_version, ttl, agent_id=agent, workflow=workflow
        ).to_dict()  # fmt: skip
    emit(fmt, data, lambda: f"{data['key']} = version {data['version']}")


@team.command("get")
@click.argument("key")
@FORMAT
@pass_state
@handle_errors
def get(state: State, key: str, fmt: str) -> None:
    """Print a shared value (its JSON; exit 1 if absent)."""
    with _team(state) as channel:
        data = channel.team_get(key).to_dict()
    emit(fmt, data, lambda: json.dumps(data["value"], ensure_ascii=False))


# -- workflows ------------------------------------------------------------------
@team.group()
def workflow() -> None:
    """Start and complete workflows (completing one clears its records)."""


@workflow.command("start")
@click.argument("name")
@OPTIONAL_AGENT
@FORMAT
@pass_state
@handle_errors
def workflow_start(state: State, name: str, agent: str | None, fmt: str) -> None:
    """Start a workflow; prints its id."""
    with _team(state) as channel:
        data = channel.workflow_start(name, agent_id=agent).to_dict()
    emit(fmt, data, lambda: data["id"])


@workflow.command("complete")
@click.argument("workflow_id")
@click.option("--summary", default=None, help="What the workflow achieved.")
@click.option("--escalate", is_flag=True, help="Keep the summary as an investigation note in the open sprint.")
@OPTIONAL_AGENT
@FORMAT
@pass_state
@handle_errors
def workflow_complete(
    state: State, workflow_id: str, summary: str | None, escalate: bool, agent: str | None, fmt: str
) -> None:
    """Complete a workflow and clear its records (--escalate keeps its summary in the sprint)."""
    if escalate and not (summary or "").strip():
        raise click.UsageError("--escalate needs --summary: what the workflow found")
    if escalate and state.router().lifecycle.current() is None:  # refuse before anything is cleared
        from memrouter.core.errors import InvalidInput
        from memrouter.ops.lifecycle import NO_SPRINT

        raise InvalidInput(f"cannot escalate: {NO_SPRINT}")
    with _team(state) as channel:
        report = channel.workflow_complete(workflow_id, summary, agent_id=agent).to_dict()
    data = {"id": workflow_id, **report}
    if escalate:
        from memrouter.ops.escalation import workflow_context

        author = f"agent:{agent}" if agent else None
        note = state.router().escalate(str(summary), workflow_context(workflow_id, report), author=author)
        data["escalated_to"] = note.name
    emit(
        fmt,
        data,
        lambda: (
            f"completed {workflow_id}: cleared "
            + ", ".join(f"{n} {t}" for t, n in report["cleared"].items())
            + (f"; escalated to {data['escalated_to']}" if escalate else "")
        ),
    )


# -- reservations ---------------------------------------------------------------
@team.command()
@click.argument("paths", nargs=-1, required=True)
@AGENT
@click.option("--shared", is_flag=True, help="A shared reservation (conflicts only with exclusive ones).")
@click.option("--ttl", type=float, default=3600.0, show_default=True, help="Seconds until it expires.")
@click.option("--reason", default=None, help="Why.")
@FORMAT
@pass_state
@handle_errors
def reserve(
    state: State, paths: tuple[str, ...], agent: str, shared: bool, ttl: float, reason: str | None, fmt: str
) -> None:
    """Reserve path globs (relative to the repository); exit 1 with the conflicts if others hold them."""
    with _team(state) as channel:
        result = channel.reserve(agent, paths, not shared, ttl, reason)
    data = result.to_dict()

    def text() -> str:
        if result.granted:
            return str(result.id)
        return "\n".join(f"conflict: {c.path} overlaps {c.other_path} held by {c.agent}" for c in result.conflicts)

    emit(fmt, data, text)
    if not result.granted:
        raise Conflict(f"{len(result.conflicts)} conflict(s) with other agents' reservations")


@team.command()
@click.argument("reservation_ids", nargs=-1)
@AGENT
@FORMAT
@pass_state
@handle_errors
def release(state: State, reservation_ids: tuple[str, ...], agent: str, fmt: str) -> None:
    """Release reservations (all of the agent's when no id is given)."""
    with _team(state) as channel:
        released = [r.to_dict() for r in channel.release(agent, reservation_ids or None)]
    emit(fmt, {"released": released}, lambda: f"released {len(released)} reservation(s)")
