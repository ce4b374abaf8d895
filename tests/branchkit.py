"""A repository with a main checkout and three worktrees on four branches, built with real git (importable as
``branchkit``).

main (the checkout at ``project``):  alpha, beta, gamma, delta committed; then delta changed on main.
feat-x (worktree ``wt-x``):          beta changed one way, gamma removed, xray added (committed, 2 commits);
                                     draft added and left uncommitted.
fix-y  (worktree ``wt-y``):          beta changed another way (committed, 1 commit).
docs-z (worktree ``wt-z``):          no commit of its own (merged); alpha changed and left uncommitted.
"""

from __future__ import annotations

from pathlib import Path

from helpers import commit, git, git_project, write

MEMORIES = Path(".serena") / "memories"

BASE = {
    "alpha": "# Alpha\n\nThe release train leaves every Tuesday at noon.\n",
    "beta": "# Beta\n\nThe payment service retries twice on timeouts.\n",
    "gamma": "# Gamma\n\nLegacy cron jobs run on the old scheduler host.\n",
    "delta": "# Delta\n\nStaging uses port 5433 for PostgreSQL.\n",
}
DELTA_ON_MAIN = "# Delta\n\nStaging uses port 6543 for PostgreSQL since the move.\n"
BETA_ON_X = "# Beta\n\nThe payment service retries three times on timeouts, with jitter.\n"
BETA_ON_Y = "# Beta\n\nThe payment service never retries on timeouts: the caller does.\n"
XRAY = "# Xray\n\nThe flamegraph profiler needs perf installed in the container.\n"
DRAFT = "# Draft\n\nThe websocket gateway drops idle connections after ninety seconds.\n"
ALPHA_ON_Z = "# Alpha\n\nThe release train leaves every Wednesday at noon now.\n"


def build(base: Path) -> dict[str, Path]:
    """The repository under ``base``: ``{"project": ..., "wt-x": ..., "wt-y": ..., "wt-z": ...}``."""
    project, root = git_project(base)
    git(project, "config", "user.email", "ada@example.com")
    git(project, "config", "user.name", "Ada")
    for name, text in BASE.items():
        write(root, name, text)
    commit(project, "memories", "2026-01-05T10:00:00Z")
    places = {"project": project}
    for branch, folder in (("feat-x", "wt-x"), ("fix-y", "wt-y"), ("docs-z", "wt-z")):
        git(project, "worktree", "add", "-q", "-b", branch, str(base / folder))
        places[folder] = base / folder
    write(root, "delta", DELTA_ON_MAIN)
    commit(project, "delta moved", "2026-01-06T10:00:00Z")

    x = places["wt-x"] / MEMORIES
    write(x, "beta", BETA_ON_X)
    (x / "gamma.md").unlink()
    commit(places["wt-x"], "beta retries more, gamma gone", "2026-01-06T11:00:00Z")
    write(x, "xray", XRAY)
    commit(places["wt-x"], "xray", "2026-01-06T12:00:00Z")
    write(x, "draft", DRAFT)  # left uncommitted

    write(places["wt-y"] / MEMORIES, "beta", BETA_ON_Y)
    commit(places["wt-y"], "beta never retries", "2026-01-06T13:00:00Z")

    write(places["wt-z"] / MEMORIES, "alpha", ALPHA_ON_Z)  # left uncommitted
    return places
