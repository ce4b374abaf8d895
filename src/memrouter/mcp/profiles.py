"""Which tools a server offers: named profiles (``memrouter serve --tools core,git``, ``[mcp] tools``).

Every tool a client lists costs context in every session, so the default,
``core``, is the few tools an agent needs to use memories, none of which
could be mistaken for another. The other profiles add a family each; a
specification is a comma-separated list of profile names and tool names,
and the server offers their union in its own order. No MCP SDK here: the
CLI and the docs read these lists cheaply.
"""

from __future__ import annotations

from collections.abc import Iterable

from memrouter.core.errors import ConfigError

__all__ = ["DEFAULT_PROFILE", "PROFILES", "PROFILE_NAMES", "parse_tools", "selected_tools"]

# What an agent needs to use project memories: context at the start, find, read, keep, retire.
CORE = ("assemble_context", "search_memory", "get_memory", "save_memory", "invalidate_memory")
# Serena's six memory tools, under Serena's names, with Serena's answers (a drop-in for its clients).
SERENA = ("write_memory", "read_memory", "list_memories", "edit_memory", "rename_memory", "delete_memory")
# The team channel: agents, shared values, tasks, handoffs, path reservations, workflows; and each
# session's own short-term scratchpad.
TEAM = (
    "team_register", "team_heartbeat", "team_state", "team_set", "team_get", "task_add", "task_claim",
    "task_complete", "handoff", "handoff_respond", "reserve_paths", "release_paths", "workflow_complete",
    "scratchpad_write", "scratchpad_read", "scratchpad_clear",
)  # fmt: skip
# The git repository and the task at hand, and a memory's committed versions.
GIT = (
    "get_current_branch", "get_recent_commits", "get_changed_files", "get_current_diff", "search_commits",
    "get_file_history", "memory_history", "set_task_context", "get_task_context",
)  # fmt: skip
# Curation: the review queue, the janitor, sprints and promotion, the index's health, the memories whose
# anchored code changed.
REVIEW = (
    "get_pending_memories", "approve_pending_memory", "reject_pending_memory", "janitor_report", "promote_memory",
    "sprint_status", "memory_status", "stale_memories", "verify_memory",
)  # fmt: skip
GRAPH = ("get_entity", "related_memories", "graph_path")

PROFILES: dict[str, tuple[str, ...]] = {
    "core": CORE,
    "serena": SERENA,
    "team": TEAM,
    "git": GIT,
    "review": REVIEW,
    "graph": GRAPH,
}
PROFILES["all"] = tuple(name for tools in list(PROFILES.values()) for name in tools)
PROFILE_NAMES = tuple(PROFILES)
DEFAULT_PROFILE = "core"


def parse_tools(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """The words of a specification (``"core, git"`` or ``["core", "git"]``), in order; None is the default."""
    if spec is None:
        return (DEFAULT_PROFILE,)
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    words: list[str] = []
    for part in parts:
        if not isinstance(part, str):
            raise ConfigError(f"tools: each entry must be a profile or tool name, not {part!r}")
        word = part.strip()
        if word and word not in words:
            words.append(word)
    if not words:
        raise ConfigError(f"tools: name at least one profile ({', '.join(PROFILE_NAMES)}) or tool")
    return tuple(words)


def selected_tools(spec: str | Iterable[str] | None) -> frozenset[str]:
    """The tool names a specification selects: each profile's tools and each tool named on its own.

    ``ConfigError`` (exit 2) names an unknown word and the profiles there are.
    """
    known = set(PROFILES["all"])
    chosen: set[str] = set()
    for word in parse_tools(spec):
        if word in PROFILES:
            chosen.update(PROFILES[word])
        elif word in known:
            chosen.add(word)
        else:
            raise ConfigError(
                f"tools: {word!r} is neither a profile ({', '.join(PROFILE_NAMES)}) nor a tool of this server"
            )
    return frozenset(chosen)
