"""``ClaudeFlowBridge``: memrouter's team channel mirrored to a claude-flow MCP server, and read back.

memrouter's team channel stays the authority for its own records; the bridge
never runs inside a team operation. A pass (``sync``) mirrors agents,
variables, tasks, claims and handoffs (see ``tasks_sync`` and
``values_sync``); ``board`` reads claude-flow's claims and tasks for
``memrouter team status``. claude-flow down or slow costs one bounded call,
then nothing while the failure is cached (the health check every backend
uses); the next pass after it returns writes what changed meanwhile.

Configuration (``[team.claude_flow]``): ``command`` (how to start its MCP
server over stdio, e.g. ``["npx", "claude-flow@3.43.0", "mcp", "start"]``;
required), ``cwd`` (the folder it keeps its state in, relative to the
project; default the project), ``workflow`` (the memrouter workflow its
imported tasks and proxies join; default none), ``timeout`` (seconds per
call, default 5), ``interval`` (seconds between passes in ``memrouter
serve``, default 5) and ``health_ttl`` (seconds a failure is remembered,
default 30). The server's own messages go to ``<index dir>/claude-flow.log``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memrouter.core.errors import BackendContractError, BackendUnavailable, ConfigError
from memrouter.external.backends._mcp import McpSession, stdio_client_factory
from memrouter.external.backends.health import HealthCheck
from memrouter.team.bridge.client import MEMROUTER_TYPE, ClaudeFlowClient
from memrouter.team.bridge.ledger import LEDGER_FILE, Ledger
from memrouter.team.bridge.sync_pass import PROXY_PREFIX, Pass, SyncReport
from memrouter.team.bridge.tasks_sync import LIVE_CLAIMS, sync_tasks
from memrouter.team.bridge.values_sync import sync_agents, sync_variables

if TYPE_CHECKING:
    from memrouter.team import Team

__all__ = ["ClaudeFlowBridge", "ClaudeFlowConfig"]

log = logging.getLogger(__name__)
LOG_FILE = "claude-flow.log"
_KEYS = ("command", "cwd", "workflow", "timeout", "interval", "health_ttl")
# key, default, lowest, highest (seconds)
_NUMBERS = (("timeout", 5.0, 0.1, 600.0), ("interval", 5.0, 0.5, 86400.0), ("health_ttl", 30.0, 0.0, 86400.0))


@dataclass(frozen=True, slots=True)
class ClaudeFlowConfig:
    """Where claude-flow runs and how often the bridge talks to it (see the module docstring)."""

    command: tuple[str, ...]
    cwd: Path
    workflow: str | None = None
    timeout: float = 5.0
    interval: float = 5.0
    health_ttl: float = 30.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any], project: Path) -> ClaudeFlowConfig:
        unknown = sorted(set(section) - set(_KEYS))
        if unknown:
            raise ConfigError(f"[team.claude_flow] has unknown keys: {', '.join(unknown)}")
        command = section.get("command")
        if isinstance(command, str):
            command = command.split()
        if not isinstance(command, list) or not command or not all(isinstance(p, str) and p for p in command):
            raise ConfigError("[team.claude_flow] command must be a non-empty list of strings")
        cwd = Path(str(section.get("cwd", "."))).expanduser()
        workflow = section.get("workflow")
        if workflow is not None and not isinstance(workflow, str):
            raise ConfigError("[team.claude_flow] workflow must be a workflow id")
        numbers = {}
        for key, default, low, high in _NUMBERS:
            value = section.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise ConfigError(f"[team.claude_flow] {key} must be a number of seconds from {low:g} to {high:g}")
            numbers[key] = float(value)
        return cls(tuple(command), cwd if cwd.is_absolute() else project / cwd, workflow, **numbers)


class ClaudeFlowBridge:
    """Passes between one ``Team`` and one claude-flow server; thread-safe (one pass at a time)."""

    def __init__(self, team: Team, client: ClaudeFlowClient, ledger: Ledger, health: HealthCheck, workflow: str | None):
        self.team = team
        self.client = client
        self.ledger = ledger
        self.health = health
        self.workflow = workflow
        self.last: SyncReport | None = None
        self._lock = threading.Lock()
        self._errlog: TextIO | None = None
        self.interval = 5.0
        """Seconds between passes when a ``BridgeRunner`` runs them."""

    @classmethod
    def open(cls, team: Team, config: ClaudeFlowConfig, index_dir: Path) -> ClaudeFlowBridge:
        """A bridge whose server is started on the first call (over stdio, in ``config.cwd``)."""

        config.cwd.mkdir(parents=True, exist_ok=True)
        Path(index_dir).mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CLAUDE_FLOW_DISABLE_BRIDGE": os.environ.get("CLAUDE_FLOW_DISABLE_BRIDGE", "1")}
        errlog = open(Path(index_dir) / LOG_FILE, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        factory = stdio_client_factory(list(config.command), env=env, cwd=str(config.cwd), errlog=errlog)
        session = McpSession(
            factory, label="claude-flow", timeout=config.timeout, connect_timeout=max(30.0, config.timeout)
        )
        health = HealthCheck.for_command(config.command[0], cwd=str(config.cwd), ttl=config.health_ttl)
        bridge = cls(team, ClaudeFlowClient(session), Ledger(Path(index_dir) / LEDGER_FILE), health, config.workflow)
        bridge._errlog = errlog
        bridge.interval = config.interval
        return bridge

    def close(self) -> None:
        self.client.close()
        self.ledger.close()
        if self._errlog is not None:
            self._errlog.close()

    def sync(self) -> SyncReport:
        """One pass; claude-flow down gives a report with ``up`` false and changes nothing.

        Passes of every process on this index folder take turns (a file lock
        beside the ledger), so two of them never create the same task twice.
        """
        with self._lock, _exclusive(self.ledger.path.with_suffix(".lock")):
            report = self._pass()
            self.last = report
            return report

    def _pass(self) -> SyncReport:
        if not self.health.check():
            return SyncReport(up=False, error=self.health.last_error or "claude-flow is down")
        try:
            p = Pass.read(self.team, self.client, self.ledger, self.workflow)
        except (BackendUnavailable, BackendContractError) as exc:
            return self._down(exc)
        try:
            for step in (sync_tasks, sync_variables, sync_agents):
                step(p)
        except BackendUnavailable as exc:
            p.report.up, p.report.error = False, str(exc)
            self.health.record_failure(str(exc))
            return p.report
        except BackendContractError as exc:
            p.report.errors.append(str(exc))
        self.health.record_success()
        return p.report

    def _down(self, exc: Exception) -> SyncReport:
        self.health.record_failure(str(exc))
        log.warning("claude-flow: %s", exc)
        return SyncReport(up=False, error=str(exc))

    def board(self) -> dict[str, Any]:
        """claude-flow's claims and tasks, marked with their source, and the conflicts between the two boards."""
        if not self.health.check():
            return {"source": "claude-flow", "up": False, "error": self.health.last_error}
        with self._lock:
            try:
                p = Pass.read(self.team, self.client, self.ledger, self.workflow)
            except (BackendUnavailable, BackendContractError) as exc:
                self.health.record_failure(str(exc))
                return {"source": "claude-flow", "up": False, "error": str(exc)}
        self.health.record_success()
        mapped = {remote: local for local, (remote, _) in self.ledger.all("task").items() if remote}
        claims = [
            {
                "issue": c.issue,
                "holder": c.holder_claimant,
                "status": c.status,
                "task": mapped.get(c.issue),
                "handoff_to": None if c.handoff_to is None else f"agent:{c.handoff_to[0]}:{c.handoff_to[1]}",
                "source": "claude-flow",
            }  # fmt: skip
            for c in p.claims.values()
            if c.status in LIVE_CLAIMS
        ]
        tasks = [
            {
                "id": t.id,
                "type": t.type,
                "description": t.description,
                "status": t.status,
                "priority": t.priority,
                "task": mapped.get(t.id),
                "source": "claude-flow",
            }  # fmt: skip
            for t in p.remote_tasks.values()
        ]
        return {
            "source": "claude-flow",
            "up": True,
            "claims": claims,
            "tasks": tasks,
            "conflicts": _conflicts(p, mapped),
        }


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _conflicts(p: Pass, mapped: dict[str, str]) -> list[str]:
    """Tasks claimed on both sides by different agents (a handoff on its way is not a conflict)."""
    found = []
    for issue, claim in p.claims.items():
        task = p.tasks.get(mapped.get(issue, ""))
        if task is None or task.state != "claimed" or task.agent is None or claim.status not in LIVE_CLAIMS:
            continue
        ours = p.claimant_of(task.agent)
        moving = claim.handoff_to is not None and (
            f"agent:{claim.handoff_to[0]}:{claim.handoff_to[1]}" == ours or claim.holder_claimant == ours
        )
        if (
            claim.holder_claimant != ours
            and not moving
            and not (task.agent.startswith(PROXY_PREFIX) and claim.holder_type != MEMROUTER_TYPE)
        ):
            found.append(
                f"task {task.id} ({task.title[:60]}) is claimed by {task.agent} and by {claim.holder_claimant}"
            )
    return found
