"""The ``memrouter`` command group: a thin layer over the Router.

The console script is ``memrouter.cli.console:main``, which runs plain search
command lines itself (``memrouter.cli.fast_search``) and hands everything else
to this group. Exit codes: 0 ok, 1 the operation failed, 2 bad usage or bad
input, 3 a backend or protocol error, 4 the local index could not be used.
Errors print one clear line on stderr.
"""

from __future__ import annotations

import os

import click

from memrouter import __version__
from memrouter.cli import (
    adopt,
    branches,
    channels,
    context,
    graph,
    guard,
    janitor,
    memories,
    quality,
    review,
    services,
    team,
    team_bridge,
    ui,
    verify,
)
from memrouter.cli.argv import undecodable
from memrouter.cli.common import State, click_options
from memrouter.cli.search_options import GROUP_OPTIONS

__all__ = ["main"]


class CommandGroup(click.Group):
    """The group every command line passes through: it refuses one that is not text before any command runs
    (``memrouter.cli.argv``), with one line on stderr and exit 2."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        problem = undecodable(args, os.environ)
        if problem is not None:
            click.echo(f"memrouter: {problem}", err=True)
            ctx.exit(2)
        return super().parse_args(ctx, args)


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click_options(GROUP_OPTIONS)
@click.version_option(version=__version__)
@click.pass_context
def main(ctx: click.Context, root: str | None, index_dir: str | None) -> None:
    """memrouter: search and manage your project's memories, from one place."""
    ctx.obj = State(root, index_dir)


for command in (
    memories.index, memories.search, memories.get, memories.history, memories.list_, memories.save, memories.delete, memories.status, guard.check,
    services.serve, quality.doctor, quality.eval_, services.sync, services.validate, services.hook,
    services.embed_serve, team.team, graph.graph, channels.sprint, channels.promote, channels.invalidate,
    context.context, review.review, review.provenance, review.audit, janitor.janitor, ui.ui, verify.verify,
    adopt.init, adopt.import_, adopt.export, branches.branches,
):  # fmt: skip
    main.add_command(command)
team.team.add_command(team_bridge.sync)
