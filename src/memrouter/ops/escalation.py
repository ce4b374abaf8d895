"""Escalation: a team-channel finding becomes a sprint memory.

The team channel is live and short-lived (its records are cleared when a
workflow completes); what a team found and wants kept is escalated into the
open sprint as an investigation note: kind ``investigation``, ``source:
team_escalation``, the summary as its text and the team context (a
workflow's report, task ids, who did what) kept below it as a fenced JSON
block, so the note is readable and the record is exact. It is an ordinary
save, so it is routed, guarded and indexed like any other.
"""

from __future__ import annotations

import json
from typing import Any

from memrouter.core.errors import InvalidInput

__all__ = ["MAX_CONTEXT_CHARS", "escalation_text", "workflow_context"]

MAX_CONTEXT_CHARS = 50_000
_TITLE_CHARS = 80


def escalation_text(summary: str, team_context: dict[str, Any] | None, title: str | None) -> tuple[str, str]:
    """``(title, markdown)`` of the note escalating ``summary`` with ``team_context``; ``InvalidInput`` if unfit."""
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidInput("an escalation needs a summary: what the team found")
    if team_context is not None and not isinstance(team_context, dict):
        raise InvalidInput("the team context must be a JSON object")
    try:
        context = json.dumps(team_context or {}, indent=2, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"the team context is not JSON: {exc}") from exc
    if len(context) > MAX_CONTEXT_CHARS:
        raise InvalidInput(f"the team context is {len(context)} characters as JSON; the limit is {MAX_CONTEXT_CHARS}")
    first = summary.strip().splitlines()[0].strip(" #")
    title = (title or "").strip() or (first if len(first) <= _TITLE_CHARS else first[: _TITLE_CHARS - 1] + "…")
    fence = "````" if "```" in context else "```"
    text = f"# {title}\n\n{summary.strip()}\n\n## Team context\n\n{fence}json\n{context}\n{fence}\n"
    return title, text


def workflow_context(workflow_id: str, report: dict[str, Any]) -> dict[str, Any]:
    """The team context a completed workflow escalates with: its id, what was cleared, the kept log."""
    return {"workflow_id": workflow_id, **{key: value for key, value in report.items() if key != "summary"}}
