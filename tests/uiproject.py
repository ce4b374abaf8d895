"""A small real project for the web UI's tests: a git repository of memories with history, a pending one, a hostile one."""

from __future__ import annotations

from pathlib import Path

from helpers import commit, git, git_project, write

HOSTILE = (
    "---\ntitle: Hostile note\n---\n# Hostile note\n\n"
    "<script>window.__pwned = 1; document.title = 'pwned'</script>\n\n"
    '<img src=x onerror="window.__pwned = 2">\n\n'
    "[click me](javascript:window.__pwned=3) and [data](data:text/html,<script>alert(1)</script>)\n"
)
PENDING = (
    "---\ntitle: Cache TTL guess\nstatus: pending_review\nauthor: agent:scout\nconfidence: 0.4\n---\n"
    "# Cache TTL guess\n\nThe search cache probably keeps entries for ten minutes.\n"
)


def ui_project(base: Path) -> tuple[Path, Path, str]:
    """The project, its memories root, and the commit where the database decision said MySQL."""
    project, root = git_project(base)
    git(project, "config", "user.name", "Reviewer Rita")
    git(project, "config", "user.email", "rita@example.com")
    write(
        root,
        "decisions/database",
        "---\ntitle: Database choice\nkind: adr\ntags: [storage]\n---\n# Database choice\n\nWe use MySQL for orders.\n",
    )
    write(root, "conventions/commits", "# Commit messages\n\nUse the imperative mood. See [[decisions/database]].\n")
    commit(project, "first decisions", "2026-01-05T10:00:00+00:00")
    first = git(project, "rev-parse", "HEAD").strip()
    write(
        root,
        "decisions/database",
        "---\ntitle: Database choice\nkind: adr\ntags: [storage]\n---\n# Database choice\n\nWe use PostgreSQL 16 for orders, see ADR-001.\n",
    )
    write(
        root,
        "adr/adr-001",
        "# ADR-001 PostgreSQL\n\n- relates_to [[decisions/database]]\n\nTransactions matter. Mentions mem:missing/note too.\n",
    )
    write(root, "notes/hostile", HOSTILE)
    write(root, "review/cache-ttl", PENDING)
    commit(project, "move to PostgreSQL", "2026-02-10T10:00:00+00:00")
    return project, root, first
