"""The small sections of memrouter.toml: their settings and how each is read and checked.

``memrouter.config.settings`` reads the file and passes each section here; nothing else reads them.
"""

from __future__ import annotations

from memrouter.core.errors import ConfigError
from memrouter.core.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_GLOBS",
    "AnchorsConfig",
    "BRANCH_CHOICES",
    "BranchesConfig",
    "ContextConfig",
    "JanitorConfig",
    "anchors_config",
    "branches_config",
    "context_config",
    "janitor_config",
    "mcp_tools",
    "scratch_ttl",
    "section_numbers",
    "sources",
]

# ``[sources] globs`` by default: what agents and people already wrote down in a repository.
DEFAULT_GLOBS = ("CLAUDE.md", "AGENTS.md", ".cursor/rules/**", "docs/adr/**")


@record
class JanitorConfig:
    """Usage-based ranking decay and the janitor's idea of stale (``memrouter.index.sqlite.access``)."""

    # How much of its score a long-idle memory may lose (0: no decay, the default; at most 1).
    decay: float = 0.0
    # Days without an access after which a memory counts as stale (and has lost half its decay).
    stale_days: float = 90.0
    # Days without activity after which an active team workflow is idle: the janitor proposes completing it.
    workflow_idle_days: float = 14.0
    # Days neither returned by get or search nor changed or verified: the janitor proposes archiving.
    unused_days: float = 180.0


@record
class AnchorsConfig:
    """Anchors: what code memories are about, and what a stale one costs in search (``memrouter.anchors``)."""

    # Anchors are also inferred from the text (paths, path:line, path#Symbol, distinctive backticked names).
    infer: bool = True
    # The share of its score a stale or broken memory loses in search (still found, marked in ``why``);
    # measured on the ai-agents golden set by benchmarks/bench_anchors.py (docs/anchors.md).
    stale_share: float = 0.2


@record
class BranchesConfig:
    """Other local branches and worktrees in search (``memrouter.ops.branch_search``)."""

    # "none": this checkout's memories only (the default); "local": also those only other local branches and
    # worktrees hold.
    include: str = "none"
    # The share of its relevance (which places it) and score a memory from another branch loses in search; measured by
    # benchmarks/bench_branches.py --share (docs/branches.md).
    share: float = 0.2


BRANCH_CHOICES = ("none", "local")


@record
class ContextConfig:
    """Context assembly (``memrouter.ops.context``)."""

    # The share of a budget kept free for tokenizers that count more than o200k.
    margin: float = 0.05


def section_numbers(section: Any, name: str, defaults: dict[str, float]) -> dict[str, float]:
    """The numbers of table ``[name]``: each key of ``defaults``, as given or by default."""
    if not isinstance(section, dict):
        raise ConfigError(f"[{name}] must be a table")
    try:
        return {key: float(section.get(key, default)) for key, default in defaults.items()}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{name}]: {exc}") from exc


def scratch_ttl(section: Any) -> float:
    ttl = section_numbers(section, "scratch", {"ttl": 7200.0})["ttl"]
    if not 0 < ttl <= 7 * 86400:
        raise ConfigError("[scratch] ttl must be between 0 and 7 days, in seconds")
    return ttl


def context_config(section: Any) -> ContextConfig:
    margin = section_numbers(section, "context", {"margin": ContextConfig().margin})["margin"]
    if not 0 <= margin <= 0.5:
        raise ConfigError("[context] margin must be between 0 and 0.5 (a share of the budget)")
    return ContextConfig(margin)


def janitor_config(section: Any) -> JanitorConfig:
    default = JanitorConfig()
    found = section_numbers(
        section, "janitor",
        {"decay": default.decay, "stale_days": default.stale_days, "workflow_idle_days": default.workflow_idle_days,
         "unused_days": default.unused_days},
    )  # fmt: skip
    decay, stale_days, idle_days = found["decay"], found["stale_days"], found["workflow_idle_days"]
    unused_days = found["unused_days"]
    if not 0 <= decay <= 1 or not all(0 < days <= 36500 for days in (stale_days, idle_days, unused_days)):
        raise ConfigError(
            "[janitor] decay must be between 0 and 1, stale_days, workflow_idle_days and unused_days between 0 and 36500"
        )
    return JanitorConfig(decay, stale_days, idle_days, unused_days)


def anchors_config(section: Any) -> AnchorsConfig:
    if not isinstance(section, dict):
        raise ConfigError("[anchors] must be a table")
    infer = section.get("infer", AnchorsConfig().infer)
    if not isinstance(infer, bool):
        raise ConfigError(f"[anchors] infer must be true or false, got {infer!r}")
    share = section.get("stale_share", AnchorsConfig().stale_share)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ConfigError(f"[anchors] stale_share must be a number from 0 to 1 (0: no lowering), got {share!r}")
    return AnchorsConfig(infer, float(share))


def branches_config(section: Any) -> BranchesConfig:
    if not isinstance(section, dict):
        raise ConfigError("[branches] must be a table")
    include = section.get("include", BranchesConfig().include)
    if include not in BRANCH_CHOICES:
        raise ConfigError(f'[branches] include must be "none" or "local", got {include!r}')
    share = section.get("share", BranchesConfig().share)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
        raise ConfigError(f"[branches] share must be a number from 0 to below 1 (0: no lowering), got {share!r}")
    return BranchesConfig(include, float(share))


def sources(section: Any) -> tuple[str, ...]:
    """``[sources] globs``: repository paths and globs (``**`` any depth); ``[]`` reads no source file."""
    if not isinstance(section, dict):
        raise ConfigError("[sources] must be a table")
    globs = section.get("globs", list(DEFAULT_GLOBS))
    if not isinstance(globs, list) or not all(isinstance(g, str) and g.strip() for g in globs):
        raise ConfigError('[sources] globs must be a list of paths or globs, such as ["CLAUDE.md", "docs/adr/**"]')
    if any(g.strip().startswith("/") or ".." in g.split("/") for g in globs):
        raise ConfigError("[sources] globs are paths inside the repository (no leading / and no ..)")
    return tuple(g.strip() for g in globs)


def mcp_tools(section: Any) -> tuple[str, ...]:
    """``[mcp] tools``: a comma-separated string or a list of profile and tool names (checked by the server)."""
    if not isinstance(section, dict):
        raise ConfigError("[mcp] must be a table")
    tools = section.get("tools", "core")
    words = tools.split(",") if isinstance(tools, str) else tools
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
        raise ConfigError('[mcp] tools must be a list of profile or tool names, e.g. ["core", "git"]')
    chosen = tuple(dict.fromkeys(word.strip() for word in words if word.strip()))
    if not chosen:
        raise ConfigError("[mcp] tools must name at least one profile or tool")
    return chosen
