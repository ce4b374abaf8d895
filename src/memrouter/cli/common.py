"""What every command shares: the resolved options, errors as exit codes, output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memrouter.errors import MemoryRouterError, exit_code_for

__all__ = ["FORMAT", "State", "emit", "handle_errors", "pass_state"]

F = TypeVar("F", bound=Callable[..., Any])

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)


class State:
    """What the group options resolved to, shared with every command."""

    def __init__(self, root: str | None, index_dir: str | None) -> None:
        self.root = root
        self.index_dir = index_dir
        self._router: Any = None

    def router(self) -> Any:
        if self._router is None:
            from memrouter.router import Router

            self._router = Router.open(root=self.root, index_dir=self.index_dir, watch=False)
        return self._router


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
