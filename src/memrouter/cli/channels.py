"""``memrouter sprint``, ``promote`` and ``invalidate``: the sprint lifecycle and validity (``memrouter.ops.lifecycle``)."""

from __future__ import annotations

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state

__all__ = ["invalidate", "promote", "sprint"]


@click.group()
def sprint() -> None:
    """Open, inspect and close sprints (the sprint channel's lifecycle)."""


@sprint.command("start")
@click.argument("sprint_id", metavar="ID")
@click.option("--weeks", type=int, default=4, show_default=True, help="Length of the sprint in weeks.")
@click.option("--goal", default=None, help="What the sprint is for.")
@FORMAT
@pass_state
@handle_errors
def start(state: State, sprint_id: str, weeks: int, goal: str | None, fmt: str) -> None:
    """Open sprint ID (its record: sprints/ID/_sprint.md; commit it)."""
    opened = state.router().lifecycle.start(sprint_id, weeks=weeks, goal=goal)
    emit(fmt, opened.to_dict(), lambda: f"sprint {opened.id} open: {opened.start} to {opened.end}")


@sprint.command("status")
@FORMAT
@pass_state
@handle_errors
def status(state: State, fmt: str) -> None:
    """Show the open sprint, its memories and whether it is past its end."""
    data, warnings = state.router().lifecycle.status()
    data["warnings"] = warnings

    def text() -> str:
        current = data["current"]
        if current is None:
            lines = ["no sprint is open (memrouter sprint start ID)"]
        else:
            goal = f", goal: {current['goal']}" if current["goal"] else ""
            lines = [
                f"sprint {current['id']}: {current['start']} to {current['end']}, {current['memories']} memories{goal}"
            ]
        return "\n".join(lines + [f"warning: {w}" for w in warnings])

    emit(fmt, data, text)


@sprint.command("close")
@click.option(
    "--promote", "names", multiple=True, metavar="NAME", help="Promote this memory to long-term (repeatable)."
)
@click.option("--archive-rest", is_flag=True, help="Archive every memory not promoted (status: archived).")
@click.option("--reason", default=None, help="Why the memories are promoted (kept in their front matter).")
@click.option("--dry-run", is_flag=True, help="Show what would be promoted and archived; change nothing.")
@FORMAT
@pass_state
@handle_errors
def close(
    state: State, names: tuple[str, ...], archive_rest: bool, reason: str | None, dry_run: bool, fmt: str
) -> None:
    """Close the open sprint: each memory is promoted or archived."""
    done = state.router().lifecycle.close(promote=names, archive_rest=archive_rest, dry_run=dry_run, reason=reason)

    def text() -> str:
        verb = "would " if done.dry_run else ""
        lines = [f"{verb}promote {p.source} -> {p.target}{' (merge)' if p.merged else ''}" for p in done.promoted]
        lines += [f"{verb}archive {name}" for name in done.archived]
        lines.append(f"sprint {done.sprint} {'would close' if done.dry_run else 'closed'}")
        return "\n".join(lines)

    emit(fmt, done.to_dict(), text)


@sprint.command("archive")
@click.argument("name")
@click.option("--expected-hash", default=None, help="Archive only if the memory still has this content hash.")
@FORMAT
@pass_state
@handle_errors
def archive(state: State, name: str, expected_hash: str | None, fmt: str) -> None:
    """Archive sprint memory NAME now (status: archived), as sprint close does with the rest."""
    done = state.router().archive(name, expected_hash=expected_hash)
    emit(fmt, done.to_dict(content=False), lambda: f"archived {done.name}")


@click.command()
@click.argument("name")
@click.option("--reason", required=True, help="Why it is long-term knowledge now.")
@click.option(
    "--as", "target", default=None, metavar="NAME", help="The long-term name (default: NAME without sprints/ID/)."
)
@click.option("--merge", is_flag=True, help="Merge into a long-term memory with the same name, content or title.")
@click.option("--expected-hash", default=None, help="Promote only if the memory still has this content hash.")
@FORMAT
@pass_state
@handle_errors
def promote(
    state: State, name: str, reason: str, target: str | None, merge: bool, expected_hash: str | None, fmt: str
) -> None:
    """Promote sprint memory NAME to long-term, with its provenance."""
    done = state.router().promote(name, reason=reason, target=target, merge=merge, expected_hash=expected_hash)
    emit(fmt, done.to_dict(), lambda: f"promoted {done.source} -> {done.target}{' (merged)' if done.merged else ''}")


@click.command()
@click.argument("name")
@click.option("--reason", required=True, help="Why it no longer holds (kept in its front matter).")
@click.option("--superseded-by", default=None, metavar="NAME", help="The memory that replaces it.")
@FORMAT
@pass_state
@handle_errors
def invalidate(state: State, name: str, reason: str, superseded_by: str | None, fmt: str) -> None:
    """Mark memory NAME obsolete (never deleted; search --history still finds it)."""
    memory = state.router().invalidate(name, reason, superseded_by)
    emit(fmt, memory.to_dict(content=False), lambda: f"invalidated {memory.name}")
