"""``memrouter verify``: whether the code each anchored memory describes changed since (``memrouter.ops.verify``)."""

from __future__ import annotations

import sys
from typing import Any

import click

from memrouter.cli.common import AGENT, State, emit, handle_errors, pass_state

__all__ = ["verify"]


@click.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option(
    "--since", default=None, metavar="REV", help="Only memories an anchor's change after commit REV made stale."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
    help="Output format; github prints workflow annotations.",
)  # fmt: skip
@click.option("--check", is_flag=True, help="Exit 1 when a memory is stale or broken (for CI and pre-push).")
@click.option("--diff", "show_diff", is_flag=True, help="Show the diff of each changed symbol or lines (text format).")
@click.option(
    "--accept", "accept", default=None, metavar="NAME",
    help="Stamp verified: <HEAD commit> in memory NAME once you checked it against the code (a reviewable change).",
)  # fmt: skip
@click.option(
    "--staged", is_flag=True, help="Check the staging area and show what the next commit makes stale (the git hook)."
)
@AGENT
@pass_state
@handle_errors
def verify(
    state: State, names: tuple[str, ...], since: str | None, fmt: str, check: bool, show_diff: bool,
    accept: str | None, staged: bool, agent: str | None,
) -> None:  # fmt: skip
    """Check anchored memories against the code: fresh, stale (the commits and the diff) or broken.

    A memory's anchors are its front matter's `anchors:` (path, path#Symbol, path:L10-L40, a commit) and
    what its text names (paths, path:line, path#Symbol, a backticked name that is one definition). Renames
    and moves are followed; uncommitted edits count as now. Exit 0, or 1 with --check when any memory is
    stale or broken; 2 on bad input.
    """
    router = state.router()
    from memrouter.ops import verify as anchored

    if accept is not None:
        if names or since or staged:
            raise click.UsageError("--accept NAME takes no other names, --since or --staged")
        memory = anchored.accept(router.workspace, accept, actor=state.actor(agent))
        stamp = str(memory.extra.get("verified", ""))
        emit(
            fmt if fmt != "github" else "text",
            {"name": memory.name, "verified": stamp, "hash": memory.hash},
            lambda: f"{memory.name}: verified at {stamp[:12]} (front matter written; commit it to share it)",
        )
        return
    report = anchored.verify(router.workspace, list(names) or None, since=since, staged=staged)
    if fmt == "github":
        click.echo(_github(report, router))
    else:
        emit(fmt, report.to_dict(), lambda: _text(report, show_diff, staged))
    if check and report.failing:
        sys.exit(1)


def _text(report: Any, show_diff: bool, staged: bool) -> str:
    if staged and not report.memories:
        return ""  # the commit makes nothing stale: the hook says nothing
    lines: list[str] = (
        [f"memrouter: this commit makes {len(report.memories)} memories stale or broken:"] if staged else []
    )
    for memory in report.memories:
        lines.append(
            f"{memory.status:<7} {memory.name}" + (f": {memory.summary.split(': ', 1)[1]}" if memory.summary else "")
        )
        if memory.status == "fresh":
            continue
        for anchor in memory.anchors:
            if anchor.status == "fresh":
                continue
            detail = [anchor.status]
            if anchor.changed_in:
                shown = ", ".join(commit[:7] for commit in anchor.changed_in[-3:])
                detail.append(
                    f"changed in {shown}" + (f" (+{len(anchor.changed_in) - 3})" if len(anchor.changed_in) > 3 else "")
                )
            if anchor.uncommitted and "uncommitted" not in (anchor.note or ""):
                detail.append("uncommitted edits")
            if anchor.moved_to:
                detail.append(f"now {anchor.moved_to}")
            if anchor.note:
                detail.append(anchor.note)
            lines.append(f"  {anchor.label} ({anchor.origin}): " + "; ".join(detail))
            if show_diff and anchor.diff:
                lines += [f"    {line}" for line in anchor.diff.splitlines()]
    if staged:
        lines.append("check them against the code, then `memrouter verify --accept NAME`")
        return "\n".join(lines)
    counts = report.counts()
    what = "anchored"
    summary = f"{len(report.memories)} {'memory' if len(report.memories) == 1 else 'memories'} {what}: " + ", ".join(
        f"{n} {state}" for state, n in counts.items() if n or state != "unknown"
    )
    lines.append(f"{summary} (of {report.checked} checked at {(report.head or 'no commit')[:7]})")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def _github(report: Any, router: Any) -> str:
    """GitHub Actions workflow commands: a warning per stale memory, an error per broken one, at the memory file."""
    from memrouter.core.names import SUFFIX

    config = router.config
    top = config.project_dir or config.root
    try:
        folder = config.root.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        folder = ""
    lines = []
    for memory in report.failing:
        level = "error" if memory.status == "broken" else "warning"
        where = f"{folder}/{memory.name}{SUFFIX}" if folder and folder != "." else f"{memory.name}{SUFFIX}"
        line = next((a.line for a in memory.anchors if a.status != "fresh" and a.line), 1)
        message = _escape(memory.summary)
        lines.append(f"::{level} file={_escape(where, True)},line={line},title=memrouter verify::{message}")
    counts = report.counts()
    lines.append(
        f"memrouter verify: {counts['stale']} stale, {counts['broken']} broken of {len(report.memories)} anchored"
    )
    return "\n".join(lines)


def _escape(text: str, property_value: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text
