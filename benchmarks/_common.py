"""Shared by the speed benchmarks: the corpus, a fixed query list, percentiles."""

from __future__ import annotations

import re
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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def rare_words(files: list[Path], count: int) -> list[str]:
    """``count`` words (7+ letters) that occur in one to three of ``files``, spread over the alphabet."""
    seen: dict[str, set[int]] = {}
    for index, file in enumerate(files):
        for word in set(re.findall(r"[a-z]{7,}", file.read_text(encoding="utf-8", errors="replace").lower())):
            seen.setdefault(word, set()).add(index)
    rare = sorted(word for word, where in seen.items() if len(where) <= 3)
    return rare[:: max(1, len(rare) // count)][:count]
