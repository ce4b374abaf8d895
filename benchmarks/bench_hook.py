"""Time of memrouter's pre-commit hook with 10 staged memories, against a hook that is just ``true``.

In one process: a git repository holding a copy of
../shared/corpora/ai-agents-1026, 10 memory changes staged (added, modified,
deleted, renamed). Each hook script is run the way git runs it (its path,
from the work tree's top folder) N times; the queue file keeps 10 entries
(re-queued entries replace themselves). Target: <= 100 ms. Also shown: a
whole ``git commit`` with each hook installed (created, then undone with
``git reset --soft`` so every run commits the same changes).

Run: ``.venv/bin/python benchmarks/bench_hook.py [--runs 30]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from memrouter.external.sync.hook import install_hook
from memrouter.external.sync.queue import QUEUE_FILE

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ai-agents-1026"


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def _median_ms(command: list[str], cwd: Path, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        root = project / ".serena" / "memories"
        shutil.copytree(CORPUS, root)
        (project / ".gitignore").write_text(".memrouter/\n")
        git(project, "init", "-q", "-b", "main")
        git(project, "config", "user.email", "bench@example.com")
        git(project, "config", "user.name", "Bench")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", "corpus")
        files = sorted(root.rglob("*.md"))
        for i in range(4):
            (root / f"bench-new-{i}.md").write_text(f"# New {i}\n\nA new memory.\n")
        for path in files[:3]:
            path.write_text(path.read_text() + "\nEdited.\n")
        for path in files[3:5]:
            git(project, "rm", "-q", str(path.relative_to(project)))
        git(project, "mv", str(files[5].relative_to(project)), ".serena/memories/bench-renamed.md")
        git(project, "add", "-A")

        hooks = project / ".git" / "hooks"
        hooks.mkdir(exist_ok=True)
        baseline_hook = Path(tmp) / "true-hook"
        baseline_hook.write_text("#!/bin/sh\ntrue\n")
        baseline_hook.chmod(0o755)
        base = _median_ms([str(baseline_hook)], project, args.runs)

        queue = project / ".memrouter" / QUEUE_FILE
        install_hook(root, queue)
        ours = _median_ms([str(hooks / "pre-commit")], project, args.runs)
        entries = json.loads(queue.read_text())["entries"]

        def commit_ms() -> float:
            samples = []
            for _ in range(max(5, args.runs // 3)):
                start = time.perf_counter()
                git(project, "commit", "-q", "-m", "bench")
                samples.append(time.perf_counter() - start)
                git(project, "reset", "-q", "--soft", "HEAD~1")
            return statistics.median(samples) * 1e3

        with_ours = commit_ms()
        (hooks / "pre-commit").unlink()
        shutil.copy(baseline_hook, hooks / "pre-commit")
        with_true = commit_ms()

    print(f"10 staged memory changes, {len(entries)} queued; median of {args.runs} runs")
    print(f"{'hook':<40} {'ms':>8} {'ratio':>7}")
    print(f"{'`true` (baseline)':<40} {base:8.2f} {1.0:6.2f}x")
    print(f"{'memrouter pre-commit (target <= 100)':<40} {ours:8.2f} {ours / base:6.2f}x")
    print(f"{'git commit with `true` hook':<40} {with_true:8.2f} {1.0:6.2f}x")
    print(f"{'git commit with memrouter hook':<40} {with_ours:8.2f} {with_ours / with_true:6.2f}x")


if __name__ == "__main__":
    main()
