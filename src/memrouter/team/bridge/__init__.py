"""The team channel's bridge to claude-flow (see ``bridge``); loaded only when ``[team.claude_flow]`` is set."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memrouter.team import Team
from memrouter.team.bridge.bridge import ClaudeFlowBridge, ClaudeFlowConfig
from memrouter.team.bridge.runner import BridgeRunner
from memrouter.team.bridge.sync_pass import SyncReport

if TYPE_CHECKING:
    from memrouter.config.settings import Config
    from memrouter.team import Team

__all__ = ["BridgeRunner", "ClaudeFlowBridge", "ClaudeFlowConfig", "SyncReport", "open_bridge", "start_runner"]


def open_bridge(config: Config, team: Team) -> ClaudeFlowBridge | None:
    """The bridge ``config`` asks for (``[team.claude_flow]``), or None when it asks for none."""
    if config.claude_flow is None:
        return None
    project = config.project_dir or config.root
    return ClaudeFlowBridge.open(
        team, ClaudeFlowConfig.from_section(config.claude_flow, Path(project)), config.index_dir
    )


def start_runner(config: Config) -> BridgeRunner | None:
    """Passes on a daemon thread, over a ``Team`` of their own, when ``[team.claude_flow]`` is set."""
    if config.claude_flow is None:
        return None

    team = Team.for_config(config)
    try:
        bridge = open_bridge(config, team)
    except BaseException:
        team.close()
        raise
    assert bridge is not None
    return BridgeRunner(bridge, bridge.interval, on_stop=team.close).start()
