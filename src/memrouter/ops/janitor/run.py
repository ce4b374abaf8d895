"""One janitor run over a workspace: gather the memories in effect, analyse, report, and (``apply``) act.

Read from the index after a refresh: the memories in effect (neither
obsolete, archived, superseded nor expired by another's ``supersedes``) and
their access counts. Memories awaiting review (``status: pending_review``)
belong to the review queue and are left alone; sprint records are not
memories to consolidate.

``apply`` makes each proposal through ``Lifecycle.invalidate`` (the normal write
path: the memory's lock, an atomic rewrite of its front matter, the index
updated): ``status: obsolete``, ``invalidation_reason``, ``valid_until`` and,
for a supersede, ``superseded_by``; a memory long unused is archived
(``Lifecycle.retire``); a stale memory's review is left to a person
(``memrouter.ops.janitor.anchored``). Nothing is deleted. The changes are
front-matter edits of the proposed files alone, so they make one reviewable
commit. A memory whose file changed since the analysis is skipped (and said
so). A second run finds the memories applied out of effect and proposes
nothing for them again. Expired short-term scratchpad notes are counted and,
with ``apply``, collected.
"""

from __future__ import annotations

import json
import time

from memrouter.core.effect import PENDING, RULES, out_of_effect
from memrouter.core.errors import BackendUnavailable, Conflict, NotFound
from memrouter.core.query import iso_time
from memrouter.core.records import replace
from memrouter.index.sqlite import anchor_marks
from memrouter.index.sqlite.access import usage_since
from memrouter.index.sqlite.queries import consolidation_rows
from memrouter.ops.branches import diverged, explain
from memrouter.ops.janitor.analyse import analyse
from memrouter.ops.janitor.anchored import anchor_proposals
from memrouter.ops.janitor.records import Entry, Finding, JanitorReport, Proposal
from memrouter.ops.lifecycle import Lifecycle
from memrouter.store.sources import is_source_name, source_file_of
from memrouter.store.sprints import read_sprints
from memrouter.team.team import in_use

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from typing import Any

    from memrouter.index.sqlite.access import Access
    from memrouter.ops.workspace import Workspace
    from memrouter.team.records import IdleWorkflow

__all__ = ["run_janitor"]

UNTIMED_RULES = tuple(rule for rule in RULES if not rule.timed)
# At most this many names per list in the usage part of the report (the counts are whole).
SHOWN_NAMES = 50
DAY = 86400.0


def run_janitor(ws: Workspace, *, apply: bool = False) -> JanitorReport:
    """See the module docstring; ``Router.janitor`` is the public call."""

    started = time.perf_counter()
    now = ws.clock()
    keeper = ws.index

    def gather() -> tuple[list[sqlite3.Row], dict[str, Access]]:
        keeper.ensure_fresh()
        return consolidation_rows(keeper.conn), keeper.access.stats()

    rows, access = keeper.indexed(gather)
    entries, pending = _entries(rows)
    sprints = read_sprints(ws.store)
    closed = {sprint.id: sprint.closed for sprint in sprints if sprint.closed is not None}
    findings, proposals = analyse(entries, iso_time(now), closed)
    stale, watched_since = keeper.indexed(
        lambda: (anchor_marks.by_name(keeper.conn, [entry.name for entry in entries]), usage_since(keeper.conn))
    )
    more, extra = anchor_proposals(
        entries, stale, access, now, ws.config.janitor.unused_days, {proposal.name for proposal in proposals},
        watched_since,
    )  # fmt: skip
    findings, proposals = [*findings, *more], [*proposals, *extra]
    for divergence in diverged(ws.config):  # a person merges the versions: review, never applied
        versions = [version.to_dict() for version in divergence.versions]
        findings.append(Finding("diverged", (divergence.name,), {"versions": versions}))
        reason = f"janitor: {explain(divergence)} since their merge base; merge the versions (`memrouter branches`)"
        proposals.append(Proposal("review", divergence.name, reason, None, ("diverged",)))
    notices = [f"{pending} memories await review (status: pending_review): left to the review queue"] * bool(pending)
    notices += [
        f"sprint {s.id} ended on {s.end} and is still open: `memrouter sprint close` promotes or archives its memories"
        for s in sprints
        if s.overdue(now)
    ]
    notices += _scratch(ws, apply)
    team, unreachable = _team(ws, apply, ws.config.janitor.workflow_idle_days)
    notices += unreachable
    if apply:
        proposals, skipped = _apply(ws, proposals, {entry.name: entry.hash for entry in entries})
        notices += skipped
    return JanitorReport(
        dry_run=not apply,
        generated=iso_time(now),
        memories=len(entries),
        findings=tuple(findings),
        proposals=tuple(proposals),
        usage=_usage(entries, access, now, ws.config.janitor.stale_days, ws.config.janitor.decay),
        notices=tuple(notices),
        team=team,
        took_ms=(time.perf_counter() - started) * 1000,
    )


def _entries(rows: list[sqlite3.Row]) -> tuple[list[Entry], int]:
    """The memories in effect as entries, and how many await review."""
    entries, pending = [], 0
    for row in rows:
        if row["status"] == PENDING:  # the review queue's, counted
            pending += 1
            continue
        # Out of effect whatever the time (expiry is the janitor's own finding): superseded, retired, a record.
        if out_of_effect(dict(row), "", named=bool(row["linked"]), rules=UNTIMED_RULES) is not None:
            continue
        extra = json.loads(row["extra"] or "{}")
        entries.append(
            Entry(
                name=row["name"],
                title=row["title"],
                body=row["body"],
                hash=row["hash"],
                tags=tuple(json.loads(row["tags"] or "[]")),
                channel=row["channel"],
                kind=row["kind"],
                status=row["status"],
                when=row["updated"] or row["created"] or iso_time(row["mtime_ns"] / 1e9),
                valid_until=row["valid_until"],
                expires=row["expires"],
                extra=extra if isinstance(extra, dict) else {},
            )
        )
    return entries, pending


def _apply(ws: Workspace, proposals: list[Proposal], hashes: dict[str, str]) -> tuple[list[Proposal], list[str]]:
    """Make each proposal through ``Lifecycle.invalidate``; skip (and say so) a memory changed since the analysis."""
    done: list[Proposal] = []
    skipped: list[str] = []
    lifecycle = Lifecycle(ws.store, ws.index, ws.lock, ws.clock)
    for proposal in proposals:
        if is_source_name(proposal.name):
            skipped.append(f"{proposal.name} is read-only (a section of {source_file_of(proposal.name)}); not changed")
            done.append(proposal)
            continue
        try:
            current = ws.store.read(proposal.name).hash
        except NotFound:
            skipped.append(f"{proposal.name} is gone since the analysis; not changed")
            done.append(proposal)
            continue
        if current != hashes.get(proposal.name):
            skipped.append(f"{proposal.name} changed since the analysis; not changed (run the janitor again)")
            done.append(proposal)
            continue
        if proposal.action == "review":  # a stale memory is checked against the code by a person or an agent
            done.append(proposal)
            continue
        if proposal.action == "archive":
            lifecycle.retire(proposal.name, proposal.reason, expected_hash=current)
            done.append(replace(proposal, applied=True))
            continue
        lifecycle.invalidate(proposal.name, proposal.reason, proposal.superseded_by)
        done.append(replace(proposal, applied=True))
    return done, skipped


def _scratch(ws: Workspace, apply: bool) -> list[str]:
    """Expired scratchpad notes not yet collected (collected with ``apply``); nothing when no scratchpad exists."""
    if not (ws.config.index_dir / "scratch.sqlite").exists():
        return []
    pad = ws.scratchpad()
    expired = pad.expired()
    if not expired:
        return []
    if apply:
        return [f"{pad.collect()} expired short-term scratchpad notes collected"]
    return [f"{expired} short-term scratchpad notes are past their TTL (--apply collects them)"]


def _team(ws: Workspace, apply: bool, idle_days: float) -> tuple[dict[str, Any], list[str]]:
    """Active team workflows idle for ``idle_days`` (completed with ``apply``, which clears their records
    and keeps their log), and a notice when the team channel cannot be reached (the rest of the run goes
    on); empty when the project has no team channel."""

    if not in_use(ws.config):
        return {}, []
    try:
        team = ws.team()
        idle = team.idle_workflows(idle_days * DAY)
    except BackendUnavailable as exc:
        return {"workflow_idle_days": idle_days, "unavailable": str(exc)}, [f"idle team workflows not checked: {exc}"]
    completed: list[str] = []
    if apply:
        for workflow in idle:
            summary = f"completed by the janitor: no activity since {iso_time(workflow.last_activity)}"
            try:
                team.workflow_complete(workflow.id, summary, agent_id="janitor")
            except Conflict:  # completed by its agents since it was found idle
                continue
            except BackendUnavailable as exc:  # went down midway: what was completed stays completed
                return _idle(idle_days, idle, completed), [f"idle team workflows not all completed: {exc}"]
            completed.append(workflow.id)
    return _idle(idle_days, idle, completed), []


def _idle(idle_days: float, idle: Sequence[IdleWorkflow], completed: list[str]) -> dict[str, Any]:
    return {
        "workflow_idle_days": idle_days,
        "idle_workflows": [workflow.to_dict() | {"completed": workflow.id in completed} for workflow in idle],
    }


def _usage(
    entries: list[Entry], access: dict[str, Access], now: float, stale_days: float, decay: float
) -> dict[str, Any]:
    """Which memories in effect were never returned by get or search, and which not for ``stale_days``."""
    never = sorted(entry.name for entry in entries if entry.name not in access)
    cutoff = now - stale_days * DAY
    stale = sorted(
        entry.name for entry in entries if entry.name in access and (access[entry.name].last or 0.0) < cutoff
    )
    counted = [access[entry.name].count for entry in entries if entry.name in access]
    return {
        "decay": decay,
        "stale_days": stale_days,
        "accessed": len(counted),
        "accesses": sum(counted),
        "never_accessed": len(never),
        "never_accessed_names": never[:SHOWN_NAMES],
        "stale": len(stale),
        "stale_names": stale[:SHOWN_NAMES],
    }
