"""``Team``: the team channel's one entry point, over ``.memrouter/team.sqlite`` or PostgreSQL.

Each method is one short transaction (see ``store``), validates its
arguments before changing anything, returns frozen records, and appends a
line to the audit log (who, what, when, ids; never values or payloads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from memrouter.index.sqlite.connection import DEFAULT_WRITE_WAIT
from memrouter.team import agents, handoffs, idle, reservations, tasks, variables, workflows
from memrouter.team.audit import AuditLog
from memrouter.team.checks import check_agent_id, check_int, check_seconds
from memrouter.team.records import (
    DEFAULT_AGENT_TTL,
    DEFAULT_LEASE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RESERVATION_TTL,
    Agent,
    AgentState,
    Clock,
    Handoff,
    IdleWorkflow,
    Reservation,
    ReservationResult,
    SystemClock,
    Task,
    TeamState,
    Variable,
    Workflow,
    WorkflowReport,
)
from memrouter.team.sql import Conn, Storage
from memrouter.team.store import TeamStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.config.settings import Config

__all__ = ["Team", "TEAM_FILE", "AUDIT_FILE", "in_use"]

T = TypeVar("T")
TEAM_FILE = "team.sqlite"
AUDIT_FILE = "audit.jsonl"
MAX_LISTED = 1000


def in_use(config: Config) -> bool:
    """Whether the project has a team channel to read: a database is configured, or ``team.sqlite`` exists."""
    return config.index.url is not None or (config.index_dir / TEAM_FILE).exists()


class Team:
    """Live coordination between agents on one project: workflows, agents, variables, tasks,
    handoffs and path reservations (see ``docs/architecture.md``, "The team channel").

    Open it with ``Team.open(index_dir)`` (``Router.team()`` does, for the
    router's index folder). ``clock`` gives the time (``time.time`` by
    default; tests pass a ``ManualClock``); ``retain_logs`` keeps a compact
    log of a completed workflow; ``max_attempts`` is how often a task may be
    claimed before it is parked for a person.
    """

    def __init__(
        self,
        store: Storage,
        audit: AuditLog,
        *,
        clock: Clock | None = None,
        retain_logs: bool = True,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self._store = store
        self._audit = audit
        self.clock: Clock = clock or SystemClock()
        self.retain_logs = retain_logs
        self.max_attempts = check_int(max_attempts, "max_attempts", low=1, high=100)

    @classmethod
    def open(
        cls,
        index_dir: str | Path,
        *,
        clock: Clock | None = None,
        retain_logs: bool = True,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        write_wait: float = DEFAULT_WRITE_WAIT,
        database: str | None = None,
        project: str | None = None,
    ) -> Team:
        """Open (creating or migrating) ``<index_dir>/team.sqlite``; the audit log is ``<index_dir>/audit.jsonl``.

        With ``database`` (a ``postgresql://`` URL) the channel is that database's rows of ``project``
        instead (``pgstore``); a database that cannot be reached is ``BackendUnavailable``, never a local file.
        """
        folder = Path(index_dir)
        store: Storage
        if database is not None:
            from memrouter.team.pgstore import PgTeamStore

            store = PgTeamStore(database, project or "")
        else:
            store = TeamStore(folder / TEAM_FILE, write_wait=write_wait)
        return cls(
            store, AuditLog(folder / AUDIT_FILE), clock=clock, retain_logs=retain_logs, max_attempts=max_attempts
        )

    @classmethod
    def for_config(cls, config: Config, **options: Any) -> Team:
        """The team channel of a project as configured: PostgreSQL when ``[index] url`` is set, else ``team.sqlite``."""
        url = config.index.url
        return cls.open(
            config.index_dir, write_wait=config.index.write_wait, database=url,
            project=config.project_key if url else None, **options,
        )  # fmt: skip

    @property
    def file(self) -> Path | None:
        """The ``team.sqlite`` file, or None when the channel is in PostgreSQL."""
        path = getattr(self._store, "path", None)
        return path if isinstance(path, Path) else None

    @property
    def location(self) -> str:
        """Where the channel lives: the ``team.sqlite`` file, or the database (password hidden) and project."""
        return self._store.location

    @property
    def busy_waits(self) -> int:
        """How many of this object's transactions waited for another process's write."""
        return self._store.busy_waits

    def close(self) -> None:
        self._store.close()
        self._audit.close()

    def __enter__(self) -> Team:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(
        self, change: Callable[[Conn, float], T], who: str | None, op: str, *, shared: bool = False, **ids: Any
    ) -> T:
        now = self.clock()
        result = self._store.write(lambda conn: change(conn, now), shared=shared)
        found = getattr(result, "id", None)
        self._audit.append(now, who, op, id=found if isinstance(found, str) else None, **ids)
        return result

    def _read(self, query: Callable[[Conn, float], T]) -> T:
        now = self.clock()
        return self._store.read(lambda conn: query(conn, now))

    # -- workflows -------------------------------------------------------------
    def workflow_start(self, name: str, *, agent_id: str | None = None) -> Workflow:
        """Start a workflow; records made in it are cleared when it completes."""
        return self._write(lambda c, now: workflows.start(c, now, name, agent_id), agent_id, "workflow_start")

    def workflow_complete(
        self, workflow_id: str, summary: str | None = None, *, agent_id: str | None = None
    ) -> WorkflowReport:
        """Complete the workflow and clear its records (agents, variables, tasks, handoffs, reservations).

        The report carries ``summary`` for the caller to keep (escalating it
        to a sprint memory is not done here).
        """
        return self._write(
            lambda c, now: workflows.complete(c, now, workflow_id, summary, self.retain_logs),
            agent_id, "workflow_complete", workflow=workflow_id,
        )  # fmt: skip

    def workflow(self, workflow_id: str) -> Workflow:
        return self._read(lambda c, now: workflows.get_workflow(c, workflow_id))

    def idle_workflows(self, idle_seconds: float) -> tuple[IdleWorkflow, ...]:
        """Active workflows with no activity (records written, heartbeats) for ``idle_seconds``, oldest first."""
        check_seconds(idle_seconds, "idle_seconds", at_most=100 * 365 * 86400.0)
        return tuple(self._read(lambda c, now: idle.idle_workflows(c, now - idle_seconds)))

    # -- agents ----------------------------------------------------------------
    def register(
        self,
        agent_id: str,
        capabilities: Iterable[str] = (),
        workflow: str | None = None,
        *,
        ttl: float = DEFAULT_AGENT_TTL,
        branch: str | None = None,
        worktree: str | None = None,
    ) -> Agent:
        """Register an agent (again: its capabilities, workflow, branch and worktree are replaced, its status is
        idle). ``branch`` and ``worktree``: where it works (``memrouter.repo.common.checkout_place`` reads them
        from git), shown in the roster and carried by the handoffs it makes."""
        caps = None if capabilities is None else list(capabilities)
        return self._write(
            lambda c, now: agents.register(c, now, agent_id, caps, workflow, ttl, branch, worktree), agent_id,
            "register", workflow=workflow,
        )  # fmt: skip

    def heartbeat(self, agent_id: str, status: str, message: str | None = None) -> Agent:
        """Say the agent is alive: status idle, working, blocked or done."""
        return self._write(
            lambda c, now: agents.heartbeat(c, now, agent_id, status, message), agent_id, "heartbeat", status=status
        )

    def get_team_state(self, agent_id: str | None = None) -> TeamState:
        """One agent's (or every agent's) status, live claims, reservations and pending handoffs."""
        if agent_id is not None:
            check_agent_id(agent_id)

        def query(conn: Conn, now: float) -> TeamState:
            if agent_id is not None:
                found = [agents.get_agent(conn, now, agent_id)]
            else:
                found = [agents.row_to_agent(row, now) for row in conn.execute("SELECT * FROM agents ORDER BY id")]
            states = []
            for agent in found:
                claims = tuple(
                    tasks.row_to_task(conn, row)
                    for row in conn.execute(
                        "SELECT * FROM tasks WHERE agent = ? AND state = 'claimed' AND lease_expires_at > ? ORDER BY seq",
                        (agent.id, now),
                    ).fetchall()
                )
                held = reservations.live_reservations(conn, now, agent.id)
                states.append(AgentState(agent, claims, held, handoffs.pending(conn, agent.id)))
            return TeamState(at=now, agents=tuple(states), tasks=tasks.counts(conn))

        return self._read(query)

    # -- shared variables ----------------------------------------------------------
    def team_set(
        self,
        key: str,
        value: Any,
        expected_version: int | None = None,
        ttl: float | None = None,
        *,
        agent_id: str | None = None,
        workflow: str | None = None,
    ) -> Variable:
        """Set a shared JSON value. With ``expected_version`` (0: must not exist) it is a
        compare-and-set: a stale version raises ``VersionConflict`` carrying ``current_version``."""
        return self._write(
            lambda c, now: variables.set_(c, now, key, value, expected_version, ttl, agent_id, workflow),
            agent_id, "team_set", key=key,
        )  # fmt: skip

    def team_get(self, key: str) -> Variable:
        """The live value of ``key`` (``NotFound`` if absent or expired)."""
        return self._read(lambda c, now: variables.get(c, now, key))

    def team_list(self, prefix: str = "", *, limit: int = MAX_LISTED) -> tuple[Variable, ...]:
        """Live variables whose key starts with ``prefix``, by key."""
        check_int(limit, "limit", low=1, high=MAX_LISTED)
        return self._read(lambda c, now: variables.list_(c, now, prefix, limit))

    def team_delete(self, key: str, expected_version: int | None = None, *, agent_id: str | None = None) -> Variable:
        """Delete ``key`` (only at ``expected_version`` when given); returns the value deleted."""
        return self._write(
            lambda c, now: variables.delete(c, now, key, expected_version), agent_id, "team_delete", key=key
        )

    # -- task queue ------------------------------------------------------------
    def task_add(
        self,
        title: str,
        payload: Any = None,
        priority: int = 0,
        depends_on: Iterable[str] = (),
        *,
        requires: Iterable[str] = (),
        workflow: str | None = None,
        agent_id: str | None = None,
        max_attempts: int | None = None,
    ) -> Task:
        """Queue a task; higher ``priority`` first, and only once every ``depends_on`` task is done.

        ``requires``: capabilities a claiming agent must have. ``workflow``
        defaults to the adding agent's.
        """
        attempts = self.max_attempts if max_attempts is None else max_attempts
        return self._write(
            lambda c, now: tasks.add(c, now, title, payload, priority, depends_on, requires, workflow, agent_id, attempts),
            agent_id, "task_add",
        )  # fmt: skip

    def task_claim(
        self,
        agent_id: str,
        lease_seconds: float = DEFAULT_LEASE,
        capabilities: Iterable[str] | None = None,
        *,
        task_id: str | None = None,
    ) -> Task | None:
        """Claim the best ready task for ``lease_seconds`` (None if none is ready); exactly one agent gets it.

        ``capabilities`` default to the agent's registered ones. With ``task_id``
        only that task is claimed (None if it is not ready for this agent).
        """
        return self._write(
            lambda c, now: tasks.claim(c, now, agent_id, lease_seconds, capabilities, task_id), agent_id, "task_claim",
            shared=True, task=task_id,
        )  # fmt: skip

    def task_renew(self, task_id: str, lease_seconds: float = DEFAULT_LEASE, *, agent_id: str | None = None) -> Task:
        """Extend a claim's lease from now; the claim must still be live."""
        return self._write(
            lambda c, now: tasks.renew(c, now, task_id, agent_id, lease_seconds), agent_id, "task_renew", shared=True
        )

    def task_complete(self, task_id: str, result: Any = None, *, agent_id: str | None = None) -> Task:
        """Mark a claimed task done with a JSON ``result`` (by its holder, when ``agent_id`` is given)."""
        return self._write(
            lambda c, now: tasks.complete(c, now, task_id, agent_id, result), agent_id, "task_complete", shared=True
        )

    def task_fail(self, task_id: str, error: str, retry: bool = True, *, agent_id: str | None = None) -> Task:
        """Give a claimed task up: requeued while attempts are left and ``retry``, else parked (or failed)."""
        task = self._write(
            lambda c, now: tasks.fail(c, now, task_id, agent_id, error, retry), agent_id, "task_fail", shared=True
        )
        return task

    def task_get(self, task_id: str) -> Task:
        return self._read(lambda c, now: tasks.get_task(c, task_id))

    def task_list(
        self, states: Iterable[str] | None = None, *, workflow: str | None = None, limit: int = MAX_LISTED
    ) -> tuple[Task, ...]:
        """Tasks (of these states, of this workflow), best first."""
        check_int(limit, "limit", low=1, high=MAX_LISTED)
        wanted = None if states is None else list(states)
        return self._read(lambda c, now: tasks.list_tasks(c, wanted, workflow, limit))

    # -- handoffs --------------------------------------------------------------
    def handoff(self, from_agent: str, to_agent: str, context: Any, task_id: str | None = None) -> Handoff:
        """Offer work (a JSON ``context``, maybe a task) to another live agent; it stays pending until answered."""
        return self._write(
            lambda c, now: handoffs.create(c, now, from_agent, to_agent, context, task_id),
            from_agent, "handoff", to=to_agent, task=task_id,
        )  # fmt: skip

    def handoff_accept(self, handoff_id: str, agent_id: str) -> Handoff:
        """Accept a pending handoff; only its receiver may."""
        return self._write(
            lambda c, now: handoffs.respond(c, now, handoff_id, agent_id, True, None), agent_id, "handoff_accept"
        )

    def handoff_reject(self, handoff_id: str, agent_id: str, reason: str | None = None) -> Handoff:
        """Reject a pending handoff; only its receiver may."""
        return self._write(
            lambda c, now: handoffs.respond(c, now, handoff_id, agent_id, False, reason), agent_id, "handoff_reject"
        )

    def handoff_get(self, handoff_id: str) -> Handoff:
        """One handoff, in whatever state (``NotFound`` if there is none)."""
        return self._read(lambda c, now: handoffs.get_handoff(c, handoff_id))

    def pending_handoffs(self, agent_id: str) -> tuple[Handoff, ...]:
        """Handoffs waiting for ``agent_id`` to answer, oldest first."""
        return self._read(lambda c, now: handoffs.pending(c, agent_id))

    # -- reservations ----------------------------------------------------------
    def reserve(
        self,
        agent_id: str,
        paths: Iterable[str],
        exclusive: bool = True,
        ttl_seconds: float = DEFAULT_RESERVATION_TTL,
        reason: str | None = None,
    ) -> ReservationResult:
        """Reserve path globs (relative to the repository); overlaps with other agents' live
        reservations are reported as conflicts and nothing is granted."""
        globs = list(paths) if not isinstance(paths, str) else paths
        return self._write(
            lambda c, now: reservations.reserve(c, now, agent_id, globs, exclusive, ttl_seconds, reason),
            agent_id, "reserve",
        )  # fmt: skip

    def release(self, agent_id: str, reservation_ids: Iterable[str] | None = None) -> tuple[Reservation, ...]:
        """Release the agent's reservations (all of them when none are named); returns those released."""
        ids = (
            None
            if reservation_ids is None
            else (list(reservation_ids) if not isinstance(reservation_ids, str) else reservation_ids)
        )
        released = self._write(lambda c, now: reservations.release(c, now, agent_id, ids), agent_id, "release")
        return released

    def renew(self, agent_id: str, reservation_id: str, ttl_seconds: float = DEFAULT_RESERVATION_TTL) -> Reservation:
        """Extend one of the agent's live reservations to ``ttl_seconds`` from now."""
        check_seconds(ttl_seconds, "ttl_seconds")
        return self._write(
            lambda c, now: reservations.renew(c, now, agent_id, reservation_id, ttl_seconds), agent_id, "renew"
        )

    def reservations(self, agent_id: str | None = None) -> tuple[Reservation, ...]:
        """Live reservations (of one agent)."""
        return self._read(lambda c, now: reservations.live_reservations(c, now, agent_id))
