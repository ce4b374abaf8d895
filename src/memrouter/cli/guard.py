"""``memrouter check``: the write guard's verdict on a text, without writing anything."""

from __future__ import annotations

import sys
from typing import Any

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state


@click.command()
@click.argument("file", type=click.File("rb"))
@click.option("--name", default=None, help="The memory it would be written as (an update of it is no duplicate).")
@click.option(
    "--actor",
    type=click.Choice(["person", "agent"]),
    default="person",
    show_default=True,
    help="Who would write it: an agent's hedged or ungrounded text goes to review.",
)
@FORMAT
@pass_state
@handle_errors
def check(state: State, file: Any, name: str | None, actor: str, fmt: str) -> None:
    """Show what the write guard would do with FILE ('-' for stdin): accepted, pending or refused.

    Duplicates are looked for in the project's memories. Exit 0 when it
    would be stored (accepted or pending), 1 when refused, 2 on bad input.
    """
    from memrouter.cli.memories import _read_text
    from memrouter.core.names import validate_name

    text = _read_text(file)
    verdict = state.router().check(text, validate_name(name, strict=False) if name else None, actor=actor)

    def lines() -> str:
        out = [verdict.outcome + (f" (flags: {', '.join(verdict.flags)})" if verdict.flags else "")]
        for reason in verdict.reasons:
            where = f"line {reason.line}" if reason.line else "text"
            out.append(f"  {where}: {reason.category}/{reason.kind}: {reason.message}")
        if verdict.confidence is not None:
            out.append(f"  confidence: {verdict.confidence}")
        return "\n".join(out)

    emit(fmt, verdict.to_dict(), lines)
    if verdict.refused:
        sys.exit(1)
