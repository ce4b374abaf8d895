"""``memrouter team sync`` and claude-flow's board in ``memrouter team status`` (``[team.claude_flow]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state
from memrouter.core.errors import ConfigError

if TYPE_CHECKING:
    from memrouter.team import Team

__all__ = ["sync", "external_board", "board_lines"]


def external_board(state: State, team: Team) -> dict[str, Any] | None:
    """claude-flow's claims and tasks beside memrouter's, or None when no bridge is configured."""
    from memrouter.config.settings import Config
    from memrouter.team.bridge import open_bridge

    bridge = open_bridge(Config.load(root=state.root, index_dir=state.index_dir), team)
    if bridge is None:
        return None
    try:
        return bridge.board()
    finally:
        bridge.close()


def board_lines(board: dict[str, Any]) -> list[str]:
    if not board["up"]:
        return [f"claude-flow: down ({board.get('error') or 'no answer'})"]
    lines = ["claude-flow:"]
    for claim in board["claims"]:
        towards = f" -> {claim['handoff_to']}" if claim["handoff_to"] else ""
        lines.append(f"  claim {claim['issue']}  {claim['status']:<15} {claim['holder']}{towards}")
    open_tasks = [t for t in board["tasks"] if t["status"] != "completed"]
    lines += [f"  task  {t['id']}  {t['status']:<15} {t['description'][:60]}" for t in open_tasks]
    lines += [f"  CONFLICT {text}" for text in board["conflicts"]]
    return lines


@click.command("sync")
@FORMAT
@pass_state
@handle_errors
def sync(state: State, fmt: str) -> None:
    """Mirror the team channel to claude-flow and take back what changed there (one pass)."""
    from memrouter.config.settings import Config
    from memrouter.team import Team
    from memrouter.team.bridge import open_bridge

    config = Config.load(root=state.root, index_dir=state.index_dir)
    with Team.for_config(config) as team:
        bridge = open_bridge(config, team)
        if bridge is None:
            raise ConfigError("no [team.claude_flow] section in memrouter.toml: nothing to sync with")
        try:
            data = bridge.sync().to_dict()
        finally:
            bridge.close()

    def text() -> str:
        if not data["up"]:
            return f"claude-flow is down: {data['error']}"
        lines = [f"{data['writes']} writes to claude-flow, {len(data['imported'])} changes taken from it"]
        lines += [f"  {line}" for line in data["imported"]]
        lines += [f"  CONFLICT {line}" for line in data["conflicts"]]
        lines += [f"  ERROR {line}" for line in data["errors"]]
        return "\n".join(lines)

    emit(fmt, data, text)
