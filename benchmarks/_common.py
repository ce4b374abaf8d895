"""Shared by the speed benchmarks: the corpus, a fixed query list, percentiles."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
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


def timed_queries(call: Callable[[str], object], queries: list[str], rounds: int = 2) -> list[float]:
    """Milliseconds of ``call(query)`` for each query, ``rounds`` times over."""
    samples = []
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            call(query)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def show_latency(label: str, samples: list[float], width: int = 52) -> float:
    """Print a row ``label  p50  p95``; the p50."""
    p50 = statistics.median(samples)
    print(f"  {label:<{width}} p50 {p50:7.2f} ms   p95 {percentile(samples, 0.95):7.2f} ms")
    return p50
