"""What every command shares: the resolved options, errors as exit codes, output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memrouter.cli.search_options import Option
from memrouter.core.errors import MemoryRouterError, exit_code_for

__all__ = ["AGENT", "FORMAT", "State", "click_options", "emit", "handle_errors", "pass_state"]

F = TypeVar("F", bound=Callable[..., Any])

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)


def click_options(options: tuple[Option, ...]) -> Callable[[F], F]:
    """Decorate a command with ``options`` (``memrouter.cli.search_options``) as click options, in order."""

    def decorate(command: F) -> F:
        for option in reversed(options):
            kind: Any = None
            if option.limits is not None:
                kind = click.IntRange(*option.limits)
            elif option.choices:
                kind = click.Choice(option.choices)
            elif option.folder:
                kind = click.Path(file_okay=False, path_type=str)
            command = click.option(
                *option.spellings, option.field, type=kind, multiple=option.takes == "values",
                is_flag=option.takes == "flag", default=option.default, show_default=option.default is not None,
                hidden=option.hidden, help=option.help,
            )(command)  # fmt: skip
        return command

    return decorate


AGENT = click.option(
    "--agent", default=None, metavar="ID", help="Act as agent ID (agent:ID) instead of you (user:<git user.name>)."
)


class State:
    """What the group options resolved to, shared with every command."""

    def __init__(self, root: str | None, index_dir: str | None) -> None:
        self.root = root
        self.index_dir = index_dir
        self._router: Any = None

    def router(self, *, rerank: bool = False) -> Any:
        """The project's router, opened on first use (``rerank``: with the second stage on, ``--rerank``)."""
        if self._router is None:
            from memrouter.cli.fast_search import configured
            from memrouter.router import Router

            self._router = Router(configured(self.root, self.index_dir, rerank=rerank), watch=False)
        return self._router

    def actor(self, agent: str | None) -> str | None:
        """Who acts: ``agent:<agent>``, else ``user:<git config user.name>`` of the project (None if unset)."""
        from memrouter.core.query import check_filter
        from memrouter.ops.audit import git_user

        if agent is not None:
            return f"agent:{check_filter('--agent', agent)}"
        config = self.router().config
        return git_user(config.project_dir or config.root)

    def reviewer(self, agent: str | None) -> str:
        """``actor``, required: a review must say who made it."""
        from memrouter.core.errors import InvalidInput

        found = self.actor(agent)
        if found is None:
            raise InvalidInput("set your name with `git config user.name NAME`, or review as an agent with --agent ID")
        return found


def handle_errors(func: F) -> F:
    """Turn library errors into one line on stderr and the contract's exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MemoryRouterError as exc:
            click.echo(f"memrouter: {exc}", err=True)
            sys.exit(exit_code_for(exc))
        except OSError as exc:
            click.echo(f"memrouter: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def emit(fmt: str, data: Any, text: Callable[[], str]) -> None:
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))
    else:
        output = text()
        if output:
            click.echo(output)


pass_state = click.make_pass_decorator(State)
