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

    Also shows the anchors it would have: its front matter's and the code it names (memrouter verify).
    Duplicates are looked for in the project's memories. Exit 0 when it
    would be stored (accepted or pending), 1 when refused, 2 on bad input.
    """
    from memrouter.cli.memories import _read_text
    from memrouter.core.names import validate_name
    from memrouter.ops.verify import preview

    text = _read_text(file)
    router = state.router()
    verdict = router.check(text, validate_name(name, strict=False) if name else None, actor=actor)
    anchors, why = preview(router.workspace, text, validate_name(name, strict=False) if name else None)

    def lines() -> str:
        out = [verdict.outcome + (f" (flags: {', '.join(verdict.flags)})" if verdict.flags else "")]
        for reason in verdict.reasons:
            where = f"line {reason.line}" if reason.line else "text"
            out.append(f"  {where}: {reason.category}/{reason.kind}: {reason.message}")
        if verdict.confidence is not None:
            out.append(f"  confidence: {verdict.confidence}")
        if anchors:  # what the memory would be tied to (memrouter verify checks it against the code)
            out.append("anchors:")
            out += [f"  {a.key} ({a.origin} {a.kind}{', ' + a.problem if a.problem else ''})" for a in anchors]
        elif why:
            out.append(f"anchors: {why}")
        return "\n".join(out)

    shown = [
        {"anchor": a.key, "origin": a.origin, "kind": a.kind, "line": a.line, "problem": a.problem} for a in anchors
    ]
    emit(fmt, verdict.to_dict() | {"anchors": shown}, lines)
    if verdict.refused:
        sys.exit(1)
