"""``memrouter review`` (the queue of memories pending review), ``memrouter provenance`` and ``memrouter audit``."""

from __future__ import annotations

import click

from memrouter.cli.common import AGENT, FORMAT, State, emit, handle_errors, pass_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.ops.audit import AuditEntry

__all__ = ["audit", "provenance", "review"]


@click.group()
def review() -> None:
    """The review queue: memories held pending review, approved or rejected by someone other than their author."""


@review.command("list")
@FORMAT
@pass_state
@handle_errors
def list_(state: State, fmt: str) -> None:
    """The memories waiting for review."""
    items = state.router().pending()

    def text() -> str:
        return "\n".join(f"{item.name}  {item.title}" for item in items) if items else "nothing pending review"

    emit(fmt, {"count": len(items), "memories": [item.to_dict() for item in items]}, text)


@review.command("show")
@click.argument("name")
@FORMAT
@pass_state
@handle_errors
def show(state: State, name: str, fmt: str) -> None:
    """A pending memory's text and provenance."""
    router = state.router()
    memory = router.get(name)
    data = memory.to_dict() | {"provenance": router.provenance(name).to_dict()}
    emit(fmt, data, lambda: memory.text.rstrip("\n"))


@review.command("approve")
@click.argument("name")
@click.option("--reason", default=None, help="Why (kept in the audit log).")
@click.option("--expected-hash", default=None, help="Refuse unless the stored file has this hash.")
@AGENT
@FORMAT
@pass_state
@handle_errors
def approve(
    state: State, name: str, reason: str | None, expected_hash: str | None, agent: str | None, fmt: str
) -> None:
    """Make the pending memory NAME active, verified by you (never by its own author)."""
    from memrouter.ops.audit import acting_as

    actor = state.reviewer(agent)
    with acting_as(actor):
        memory = state.router().approve(name, actor=actor, reason=reason, expected_hash=expected_hash)
    emit(fmt, memory.to_dict(content=False), lambda: f"approved {memory.name} ({memory.hash[:12]})")


@review.command("reject")
@click.argument("name")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@click.option("--expected-hash", default=None, help="Refuse unless the stored file has this hash.")
@AGENT
@FORMAT
@pass_state
@handle_errors
def reject(state: State, name: str, reason: str, expected_hash: str | None, agent: str | None, fmt: str) -> None:
    """Delete the pending memory NAME; the audit log keeps who, the hash and the reason."""
    from memrouter.ops.audit import acting_as

    actor = state.reviewer(agent)
    with acting_as(actor):
        memory = state.router().reject(name, actor=actor, reason=reason, expected_hash=expected_hash)
    emit(fmt, {"rejected": memory.name, "hash": memory.hash}, lambda: f"rejected {memory.name}")


@click.command()
@click.argument("name")
@FORMAT
@pass_state
@handle_errors
def provenance(state: State, name: str, fmt: str) -> None:
    """Who wrote memory NAME, from what, when, how sure, and who verified it (git history where the file is silent)."""
    found = state.router().provenance(name)

    def text() -> str:
        rows = [(key, value) for key, value in found.to_dict().items() if key != "from_git" and value is not None]
        lines = [f"{key}: {value}{' (git)' if key in found.from_git else ''}" for key, value in rows]
        return "\n".join(lines)

    emit(fmt, found.to_dict(), text)


@click.command()
@click.option("--since", default=None, help="Only lines at or after this UTC date or time (2026-01-05T09:30).")
@click.option("--name", default=None, help="Only this memory.")
@click.option("--actor", default=None, help="Only this actor (user:alice, agent:claude-code).")
@click.option("--limit", type=click.IntRange(1, 10_000), default=200, show_default=True, help="The last N lines.")
@FORMAT
@pass_state
@handle_errors
def audit(state: State, since: str | None, name: str | None, actor: str | None, limit: int, fmt: str) -> None:
    """What was done to the memories and the team channel, when and by whom (never the content)."""
    entries = state.router().audit(since=since, name=name, actor=actor, limit=limit)

    def line(entry: AuditEntry) -> str:
        data = entry.to_dict()
        change = f"{(data.get('before') or '-')[:12]} -> {(data.get('after') or '-')[:12]}"
        where = data.get("name") or " ".join(f"{k}={v}" for k, v in data.items() if k not in ("time", "actor", "op"))
        tail = f"  {data['verdict']}" if data.get("verdict") else ""
        reason = f"  ({data['reason']})" if data.get("reason") else ""
        return (
            f"{data['time']}  {data['actor']}  {data['op']}  {where}  {change if 'name' in data else ''}{tail}{reason}"
        )

    emit(fmt, {"count": len(entries), "entries": [e.to_dict() for e in entries]}, lambda: "\n".join(map(line, entries)))
