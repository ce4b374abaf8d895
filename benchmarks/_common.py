"""Shared by the speed benchmarks: the corpus, a fixed query list, percentiles."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ai-agents-1026"
QUERIES = [
    "git worktree cleanup",
    "pr review bot comments",
    "session protocol validation",
    "frontmatter validation gate",
    "merge conflict resolution",
    "ci failure flaky test",
    "pre-commit hook timeout",
    "copilot agent instructions",
    "memory index keyword lookup",
    "github actions workflow permissions",
    "powershell to python migration",
    "codeql security scanning",
    "skill description context cost",
    "shallow fetch merge base",
    "retrospective learnings",
    "quality gate definition of done",
    "how do we handle secrets in workflows",
    "labeler negation pattern",
    "adr review findings",
    "agent handoff format",
]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) of the samples."""
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
