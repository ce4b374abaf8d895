"""``memrouter context``: the memories an agent needs, in a token budget (``memrouter.ops.context``)."""

from __future__ import annotations

import click

from memrouter.cli.common import State, handle_errors, pass_state

__all__ = ["context"]


@click.command()
@click.argument("query", required=False)
@click.option("--task", default=None, help="What the agent is doing (default: the session's task context).")
@click.option("--max-tokens", type=int, default=2000, show_default=True, help="The hard budget, in o200k tokens.")
@click.option("--channel", "channels", multiple=True, help="Search only these channels (repeatable).")
@click.option("--as-of", default=None, help="Assemble from the memories as committed at a date or commit.")
@click.option(
    "--format", "fmt", type=click.Choice(["xml", "markdown", "json"]), default="xml", show_default=True,
    help="xml (for agents), markdown, or json (the blocks and items).",
)  # fmt: skip
@pass_state
@handle_errors
def context(
    state: State, query: str | None, task: str | None, max_tokens: int, channels: tuple[str, ...],
    as_of: str | None, fmt: str,
) -> None:  # fmt: skip
    """Assemble the context for QUERY (and --task): system, project, task, history and knowledge blocks."""
    built = state.router().assemble_context(
        query, task, max_tokens, channels=list(channels) or None, as_of=as_of, format=fmt
    )
    click.echo(built.rendered)
