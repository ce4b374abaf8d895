"""Shared variables and agent status between memrouter's team channel and claude-flow's memory.

A variable lives in the namespace ``memrouter.<workflow id>`` (``memrouter.team``
outside a workflow) under its own key, with its remaining TTL; agent status
lives in ``memrouter.<workflow id>.agents`` under the agent's id, expiring
with the agent's heartbeat TTL. Variables are compared three ways against
the value last mirrored: the side that changed wins, a key written on both
sides since is a conflict (reported, neither side changed), and a key
created in claude-flow's namespace is set in memrouter. Agent status goes
one way: claude-flow's agents are not memrouter's to record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memrouter.core.errors import MemoryRouterError
from memrouter.team.bridge.sync_pass import PROXY_PREFIX, Pass, digest

if TYPE_CHECKING:
    from memrouter.team.records import Variable

__all__ = ["sync_variables", "sync_agents", "namespace"]

_SEP = "\x1f"


def namespace(workflow: str | None, suffix: str = "") -> str:
    return f"memrouter.{workflow or 'team'}{suffix}"


def sync_variables(p: Pass) -> None:
    now = p.team.clock()
    live: dict[tuple[str, str], Variable] = {(namespace(v.workflow_id), v.key): v for v in p.team.team_list()}
    workflows = {namespace(v.workflow_id): v.workflow_id for v in live.values()}
    workflows.setdefault(namespace(p.workflow), p.workflow)
    base = {tuple(key.split(_SEP, 1)): entry[1] for key, entry in p.ledger.all("var").items()}
    for ns, workflow in sorted(workflows.items(), key=lambda item: item[0]):
        remote_keys = set(p.client.keys(ns))
        keys = remote_keys | {k for n, k in live if n == ns} | {k for n, k in base if n == ns}
        for key in sorted(keys):
            _one(p, ns, workflow, key, live.get((ns, key)), base.get((ns, key)), key in remote_keys, now)
    # Namespaces of workflows that ended: memrouter cleared their values, so their mirrored copies go too
    # (a value claude-flow changed since is left there, and reported).
    for ns in sorted({n for n, _ in base} - set(workflows)):
        remote_keys = set(p.client.keys(ns))
        for key in sorted(k for n, k in base if n == ns):
            theirs = digest(p.client.retrieve(ns, key)) if key in remote_keys else None
            if theirs is not None and theirs == base[(ns, key)]:
                p.client.delete(ns, key)
                p.report.writes += 1
            elif theirs is not None:
                p.conflict(f"variable {key} ({ns}) was changed in claude-flow after its workflow ended; left there")
            p.ledger.drop("var", ns + _SEP + key)


def _one(
    p: Pass, ns: str, workflow: str | None, key: str, local: Variable | None, base: str | None, listed: bool, now: float
) -> None:
    row = ns + _SEP + key
    mine = digest(local.value) if local is not None else None
    theirs_value: Any = p.client.retrieve(ns, key) if listed else None
    theirs = digest(theirs_value) if theirs_value is not None else None
    if mine == theirs:
        if mine is None:
            p.ledger.drop("var", row)
        elif mine != base:
            p.ledger.put("var", row, None, mine)
        return
    if theirs == base or (theirs is None and mine == base):
        # Only memrouter changed (or claude-flow's copy expired or was deleted): memrouter's record wins.
        if local is None:
            p.client.delete(ns, key)
            p.ledger.drop("var", row)
        else:
            ttl = None if local.expires_at is None else max(1.0, local.expires_at - now)
            p.client.store(ns, key, local.value, ttl=ttl, tags=("memrouter",))
            p.ledger.put("var", row, None, mine)
        p.report.writes += 1
    elif mine == base:
        # Only claude-flow changed: memrouter takes its value (compare-and-set at the version read).
        version = local.version if local is not None else 0
        try:
            p.team.team_set(key, theirs_value, expected_version=version, workflow=workflow)
        except MemoryRouterError as exc:  # changed meanwhile, or its workflow ended: the next pass looks again
            p.report.errors.append(f"variable {key} ({ns}) from claude-flow: {exc}")
            return
        p.ledger.put("var", row, None, theirs)
        p.report.imported.append(f"variable {key} set from claude-flow")
    else:
        p.conflict(f"variable {key} ({ns}) changed in both memrouter and claude-flow; neither was overwritten")


def sync_agents(p: Pass) -> None:
    mirrored = p.ledger.all("agent")
    seen: set[str] = set()
    for state in p.state.agents:
        agent = state.agent
        if agent.stale or agent.id.startswith(PROXY_PREFIX):
            continue
        ns = namespace(agent.workflow_id, ".agents")
        row = ns + _SEP + agent.id
        seen.add(row)
        # Re-stored while half its TTL is left, so claude-flow's copy outlives no heartbeat and expires with the agent.
        value = {
            "id": agent.id, "status": agent.status, "message": agent.message, "capabilities": list(agent.capabilities),
            "heartbeat_at": agent.heartbeat_at, "source": "memrouter",
        }  # fmt: skip
        stamp = digest(
            [value["status"], value["message"], value["capabilities"], int(agent.heartbeat_at // max(agent.ttl / 2, 1))]
        )
        if mirrored.get(row, (None, None))[1] == stamp:
            continue
        p.client.store(ns, agent.id, value, ttl=agent.ttl, tags=("memrouter", "agent"))
        p.ledger.put("agent", row, None, stamp)
        p.report.writes += 1
    for row in mirrored.keys() - seen:
        ns, _, agent_id = row.partition(_SEP)
        p.client.delete(ns, agent_id)
        p.ledger.drop("agent", row)
        p.report.writes += 1
