"""``memrouter janitor``: propose (or apply) consolidations: duplicates, contradictions, expiry (``memrouter.ops.janitor``)."""

from __future__ import annotations

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state
from memrouter.core.query import iso_time

__all__ = ["janitor"]


@click.command()
@click.option(
    "--apply/--dry-run",
    "apply",
    default=False,
    help="--apply marks each proposed memory obsolete (superseded or expired); --dry-run, the default, only reports.",
)
@FORMAT
@pass_state
@handle_errors
def janitor(state: State, apply: bool, fmt: str) -> None:
    """Find duplicates, near-duplicates, contradictions, expired, stale and long-unused memories; never deletes."""
    report = state.router().janitor(apply=apply)

    def text() -> str:
        counts = report.counts()
        lines = [
            f"{report.memories} {'memory' if report.memories == 1 else 'memories'} in effect: "
            + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in counts.items())
        ]
        verbs = {"supersede": ("superseded", "would supersede"), "expire": ("expired", "would expire"),
                 "archive": ("archived", "would archive"), "review": ("review", "review")}  # fmt: skip
        for proposal in report.proposals:
            verb = verbs[proposal.action][0 if proposal.applied else 1]
            target = f" -> {proposal.superseded_by}" if proposal.superseded_by else ""
            lines.append(f"{verb} {proposal.name}{target}: {proposal.reason.removeprefix('janitor: ')}")
        for workflow in report.team.get("idle_workflows", []):
            verb = "completed" if workflow["completed"] else "would complete"
            records = sum(workflow["records"].values())
            lines.append(
                f"{verb} team workflow {workflow['name']} ({workflow['id']}): no activity since "
                f"{iso_time(workflow['last_activity'])} ({records} records; its log is kept)"
            )
        usage = report.usage
        lines.append(
            f"usage: {usage['accessed']} accessed ({usage['accesses']} times), {usage['never_accessed']} never, "
            f"{usage['stale']} idle over {usage['stale_days']:g} days"
        )
        lines += [f"note: {notice}" for notice in report.notices]
        if (report.proposals or report.team.get("idle_workflows")) and report.dry_run:
            lines.append("nothing changed (dry run); --apply makes these changes")
        return "\n".join(lines)

    emit(fmt, report.to_dict(), text)
