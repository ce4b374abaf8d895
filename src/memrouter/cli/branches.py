"""``memrouter branches``: what the other local branches and worktrees hold that this checkout lacks
(``memrouter.ops.branches``)."""

from __future__ import annotations

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state

__all__ = ["branches"]


@click.command()
@FORMAT
@pass_state
@handle_errors
def branches(state: State, fmt: str) -> None:
    """Per other local branch and worktree: its merge state and the memories it has that this checkout lacks
    (new, changed, removed; uncommitted ones marked), then the memories changed differently on two branches."""
    from memrouter.cli.fast_search import configured
    from memrouter.ops.branches import format_report, report

    data = report(configured(state.root, state.index_dir))
    emit(fmt, data, lambda: format_report(data))
