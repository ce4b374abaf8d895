"""Tasks, claims and handoffs between memrouter's queue and claude-flow's tasks and claims board.

The rules (each applied only where the two sides differ):

- A memrouter task becomes a claude-flow task of type ``memrouter`` tagged
  ``memrouter-task:<id>``; a claude-flow task of another type is queued in
  memrouter (its payload names it). Claims live on claude-flow's board under
  the claude-flow task id.
- A memrouter agent's claim is claimed for ``agent:<id>:memrouter``; a claim
  held by a claude-flow agent is held in memrouter by a proxy agent,
  ``claude-flow:<id>``, so memrouter's agents cannot take that task.
- Done on either side is done on both. A task held on one side and claimed
  or completed by someone else on the other is a conflict: reported, and
  neither side is changed.
- A handoff of a task crosses over: memrouter's is requested on
  claude-flow's board, claude-flow's is offered in memrouter by the proxy;
  accepting it on either side accepts it on both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memrouter.core.errors import MemoryRouterError, NotFound
from memrouter.team.bridge.client import MEMROUTER_TYPE, Claim, claimant
from memrouter.team.bridge.sync_pass import PROXY_PREFIX, PROXY_TTL, Pass, local_priority, remote_priority

if TYPE_CHECKING:
    from memrouter.team.records import Task

__all__ = ["sync_tasks", "LIVE_CLAIMS", "TASK_TAG"]

TASK_TAG = "memrouter-task:"
LIVE_CLAIMS = frozenset({"active", "paused", "blocked", "handoff-pending", "review-requested", "stealable"})
OPEN_REMOTE = frozenset({"pending", "in_progress", "in-progress", "running", "assigned"})


def sync_tasks(p: Pass) -> None:
    mapped = _map_tasks(p)
    for local_id, (remote_id, _origin) in mapped.items():
        task = p.tasks.get(local_id)
        if task is not None and remote_id:
            _reconcile(p, task, remote_id)
    _handoffs_out(p, mapped)
    _handoffs_in(p)


# -- which task is which ---------------------------------------------------------------


def _map_tasks(p: Pass) -> dict[str, tuple[str | None, str | None]]:
    """Every mirrored task, local id -> (claude-flow id, origin), creating and importing as needed."""
    mapped = p.ledger.all("task")
    known_remote = {remote for remote, _ in mapped.values()}
    for task in p.tasks.values():  # a queue entry made from claude-flow whose ledger row was lost
        origin = task.payload.get("claude_flow_task") if isinstance(task.payload, dict) else None
        if isinstance(origin, str) and task.id not in mapped:
            p.ledger.put("task", task.id, origin, "claude-flow")
            mapped[task.id] = (origin, "claude-flow")
            known_remote.add(origin)
    unmapped = [t for t in p.tasks.values() if t.id not in mapped and t.state != "done"]
    if unmapped:
        for remote_id, local_id in _tagged(p, known_remote).items():
            if local_id in p.tasks and local_id not in mapped:
                p.ledger.put("task", local_id, remote_id, MEMROUTER_TYPE)
                mapped[local_id] = (remote_id, MEMROUTER_TYPE)
                known_remote.add(remote_id)
    for task in unmapped:
        if task.id not in mapped:
            remote_id = p.client.create_task(
                task.title, remote_priority(task.priority), ("memrouter", TASK_TAG + task.id)
            )
            p.report.writes += 1
            p.ledger.put("task", task.id, remote_id, MEMROUTER_TYPE)
            mapped[task.id] = (remote_id, MEMROUTER_TYPE)
    for remote in p.remote_tasks.values():
        if remote.type == MEMROUTER_TYPE or remote.id in known_remote or remote.status not in OPEN_REMOTE:
            continue
        payload = {"claude_flow_task": remote.id, "type": remote.type}
        made = p.team.task_add(
            remote.description[:500] or remote.id, payload, local_priority(remote.priority), workflow=p.workflow
        )
        p.ledger.put("task", made.id, remote.id, "claude-flow")
        mapped[made.id] = (remote.id, "claude-flow")
        p.tasks[made.id] = made
        p.report.imported.append(f"task {made.id} queued from claude-flow task {remote.id}")
    return mapped


def _tagged(p: Pass, known: set[str | None]) -> dict[str, str]:
    """claude-flow tasks memrouter created but lost track of, by their ``memrouter-task:`` tag."""
    found: dict[str, str] = {}
    checked = p.ledger.all("untagged")
    for remote in p.remote_tasks.values():
        if remote.type != MEMROUTER_TYPE or remote.id in known or remote.id in checked:
            continue
        full = p.client.task(remote.id)
        tags = [tag for tag in (full.tags if full else ()) if tag.startswith(TASK_TAG)]
        if tags:
            found[remote.id] = tags[0][len(TASK_TAG) :]
        else:
            p.ledger.put("untagged", remote.id, None, None)
    return found


# -- one task ----------------------------------------------------------------------------


def _reconcile(p: Pass, task: Task, remote_id: str) -> None:
    remote = p.remote_tasks.get(remote_id)
    claim = p.claims.get(remote_id)
    live_claim = claim if claim is not None and claim.status in LIVE_CLAIMS else None
    if remote is None:
        return
    if task.state == "done":
        if remote.status != "completed":
            p.client.complete_task(remote_id, task.result)
            p.report.writes += 1
        if live_claim is not None:
            p.client.complete_claim(remote_id)
            p.report.writes += 1
        return
    holder = task.agent if task.state == "claimed" else None
    if remote.status == "completed":
        _completed_remotely(p, task, remote_id, holder, live_claim)
    elif holder is not None and not holder.startswith(PROXY_PREFIX):
        _claimed_here(p, task, remote_id, holder, live_claim)
    elif holder is not None:
        _held_by_proxy(p, task, remote_id, holder, live_claim)
    elif live_claim is not None:
        if live_claim.holder_type != MEMROUTER_TYPE:
            _take_for(p, task, live_claim.holder, live_claim.holder_type)
        elif not _take_here(p, task, live_claim.holder):
            # memrouter's claim lapsed (lease, stale agent): claude-flow's board should say so.
            p.client.release(remote_id, live_claim.holder_claimant, "the claim ended in memrouter")
            p.report.writes += 1
            del p.claims[remote_id]


def _completed_remotely(p: Pass, task: Task, remote_id: str, holder: str | None, claim: Claim | None) -> None:
    if holder is not None and not holder.startswith(PROXY_PREFIX):
        p.conflict(f"task {task.id} ({task.title[:60]}) was completed in claude-flow while {holder} holds it")
        return
    if holder is None:
        who, kind = (claim.holder, claim.holder_type) if claim is not None else ("claude-flow", "bridge")
        holder = _take_for(p, task, who, kind)
        if holder is None:
            return
    full = p.client.task(remote_id)  # claude-flow's list carries no results
    done = full.result if full is not None and full.result is not None else {"completed_in": "claude-flow"}
    p.team.task_complete(task.id, done, agent_id=holder)
    p.report.imported.append(f"task {task.id} completed in claude-flow")
    if claim is not None:  # the board still shows it claimed: done is done on both
        p.client.complete_claim(remote_id)
        p.report.writes += 1


def _claimed_here(p: Pass, task: Task, remote_id: str, holder: str, claim: Claim | None) -> None:
    wanted = claimant(holder)
    if claim is not None and claim.holder_claimant == wanted:
        return
    if claim is not None and claim.status == "handoff-pending" and claim.handoff_to == (holder, MEMROUTER_TYPE):
        return  # accepted in memrouter: the handoff step accepts it on claude-flow's board
    if claim is not None and any(
        source == holder and p.claimant_of(target) == claim.holder_claimant for source, target in _offers(p, task.id)
    ):
        return  # handed off and accepted on claude-flow's board: the handoff step accepts it here
    if claim is not None:
        p.conflict(f"task {task.id} ({task.title[:60]}) is claimed by {holder} and by {claim.holder_claimant}")
        return
    refused = p.client.claim(remote_id, wanted)
    p.report.writes += 1
    if refused:
        p.conflict(f"task {task.id}: claude-flow refused {holder}'s claim: {refused[:120]}")
    else:
        p.claims[remote_id] = Claim(remote_id, holder, MEMROUTER_TYPE, "active")


def _held_by_proxy(p: Pass, task: Task, remote_id: str, proxy: str, claim: Claim | None) -> None:
    if claim is not None and claim.holder_claimant == p.claimant_of(proxy):
        p.proxy_for(claim.holder, claim.holder_type)
        p.team.task_renew(task.id, PROXY_TTL, agent_id=proxy)
        return
    if claim is not None and claim.holder_type == MEMROUTER_TYPE and (proxy, claim.holder) in _offers(p, task.id):
        return  # a handoff from claude-flow accepted on its board: the handoff step moves the claim here
    p.team.task_fail(task.id, "the claim ended in claude-flow", retry=True, agent_id=proxy)
    if claim is not None:
        refreshed = p.team.task_get(task.id)
        p.tasks[task.id] = refreshed
        if claim.holder_type == MEMROUTER_TYPE:
            _take_here(p, refreshed, claim.holder)
        else:
            _take_for(p, refreshed, claim.holder, claim.holder_type)


def _offers(p: Pass, task_id: str) -> list[tuple[str, str]]:
    """(from, to) of memrouter's pending handoffs of this task."""
    return [(h.from_agent, h.to_agent) for s in p.state.agents for h in s.pending_handoffs if h.task_id == task_id]


def _take_here(p: Pass, task: Task, agent_id: str) -> bool:
    """Claim ``task`` in memrouter for its agent ``agent_id`` (claimed for it on claude-flow's board)."""
    if not any(s.agent.id == agent_id and not s.agent.stale for s in p.state.agents):
        return False
    taken = p.team.task_claim(agent_id, task_id=task.id, capabilities=task.requires)
    if taken is None:
        return False
    p.tasks[task.id] = taken
    p.report.imported.append(f"task {task.id} claimed by {agent_id} on claude-flow's board")
    return True


def _take_for(p: Pass, task: Task, who: str, kind: str) -> str | None:
    """Claim ``task`` in memrouter for the proxy of claude-flow's ``who``; the proxy, or None."""
    proxy = p.proxy_for(who, kind)
    taken = p.team.task_claim(proxy, PROXY_TTL, task.requires, task_id=task.id)
    if taken is None:
        p.conflict(f"task {task.id} ({task.title[:60]}) is held in claude-flow by {who} but is not free in memrouter")
        return None
    p.tasks[task.id] = taken
    return proxy


# -- handoffs ----------------------------------------------------------------------------


def _handoffs_out(p: Pass, mapped: dict[str, tuple[str | None, str | None]]) -> None:
    """memrouter's handoffs of mirrored tasks, requested on claude-flow's board; answers carried both ways."""
    known = p.ledger.all("handoff")
    for state in p.state.agents:
        for handoff in state.pending_handoffs:
            remote_id = mapped.get(handoff.task_id or "", (None, None))[0]
            if handoff.id in known or remote_id is None or handoff.from_agent.startswith(PROXY_PREFIX):
                continue
            source, target = claimant(handoff.from_agent), p.claimant_of(handoff.to_agent)
            claim = p.claims.get(remote_id)
            if claim is None or claim.holder_claimant != source or claim.status == "handoff-pending":
                continue
            reason = handoff.context if isinstance(handoff.context, str) else None
            refused = p.client.handoff(remote_id, source, target, reason)
            p.report.writes += 1
            if refused:
                p.conflict(f"handoff {handoff.id}: claude-flow refused it: {refused[:120]}")
            else:
                p.ledger.put("handoff", handoff.id, remote_id, "pending")
    for handoff_id, (remote_id, answer) in p.ledger.all("handoff").items():
        if answer == "pending" and remote_id:
            _answer(p, handoff_id, remote_id, "handoff")


def _handoffs_in(p: Pass) -> None:
    """claude-flow's handoffs to memrouter's agents, offered in memrouter by the sender's proxy."""
    for claim in list(p.claims.values()):
        if claim.status != "handoff-pending" or claim.handoff_to is None or claim.holder_type == MEMROUTER_TYPE:
            continue
        receiver, kind = claim.handoff_to
        local_id = p.ledger.by_remote("task", claim.issue)
        key = f"{claim.issue}|{receiver}"
        if kind != MEMROUTER_TYPE or local_id is None or p.ledger.get("inbound", key) is not None:
            continue
        proxy = p.proxy_for(claim.holder, claim.holder_type)
        context = {"claude_flow": {"issue": claim.issue, "reason": claim.reason, "progress": claim.progress}}
        try:
            made = p.team.handoff(proxy, receiver, context, local_id)
        except MemoryRouterError as exc:
            p.report.errors.append(f"handoff of {claim.issue} to {receiver}: {exc}")
            continue
        p.ledger.put("inbound", key, made.id, "pending")
        p.report.imported.append(f"handoff {made.id} offered to {receiver} from claude-flow")
    for key, (handoff_id, state) in p.ledger.all("inbound").items():
        if state == "pending" and handoff_id:
            _answer(p, handoff_id, key.partition("|")[0], "inbound", key)


def _answer(p: Pass, handoff_id: str, remote_id: str, kind: str, key: str | None = None) -> None:
    """Carry an answer to a crossing handoff from the side that gave it to the other."""
    row = key or handoff_id
    try:
        local = p.team.handoff_get(handoff_id)
    except NotFound:
        p.ledger.drop(kind, row)
        return
    claim = p.claims.get(remote_id)
    target = p.claimant_of(local.to_agent)
    if local.state == "pending" and claim is not None and claim.holder_claimant == target:
        p.team.handoff_accept(handoff_id, local.to_agent)
        p.report.imported.append(f"handoff {handoff_id} accepted in claude-flow")
        p.ledger.put(kind, row, remote_id if kind == "handoff" else handoff_id, "accepted")
    elif local.state == "accepted" and claim is not None and claim.status == "handoff-pending":
        refused = p.client.accept_handoff(remote_id, target)
        p.report.writes += 1
        if refused:
            p.conflict(f"handoff {handoff_id}: claude-flow refused the acceptance: {refused[:120]}")
        p.ledger.put(kind, row, remote_id if kind == "handoff" else handoff_id, "accepted")
    elif local.state != "pending":
        p.ledger.put(kind, row, remote_id if kind == "handoff" else handoff_id, local.state)
