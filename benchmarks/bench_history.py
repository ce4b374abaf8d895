"""Time from git: ``Router.history``, ``get(as_of=...)``, ``search(as_of=...)`` and time words.

Builds a git repository holding ai-agents-1026 with 20 further commits to one
memory, then times ``history(name)`` (target <= 100 ms) and ``get(name,
as_of=date)`` against a bare ``git log -1`` process run in the same loop, the
floor any git-backed answer pays; then ``search(query, as_of=date)``: the
first query (which builds that commit's index) and warm ones (target p95 <=
30 ms), beside the same queries on the live index, and a query with a time
phrase ("... last month"), with the first read of every memory's commit
times from git.

    .venv/bin/python benchmarks/bench_history.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _common import CORPUS, QUERIES, percentiles

from memrouter import Router

ENV = {
    **os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}  # fmt: skip


def git(project: Path, *args: str, date: str | None = None) -> None:
    env = ENV | ({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})
    subprocess.run(["git", *args], cwd=project, check=True, env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-history-") as temp:
        project = Path(temp) / "project"
        root = project / ".serena" / "memories"
        shutil.copytree(CORPUS, root)
        git(project, "init", "-q", "-b", "main")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", "corpus", date="2026-01-01T10:00:00+00:00")
        name = sorted(p.relative_to(root).as_posix()[:-3] for p in root.rglob("*.md"))[100]
        path = root / f"{name}.md"
        for day in range(2, 22):
            path.write_text(path.read_text(encoding="utf-8") + f"\nchange on day {day}\n", encoding="utf-8")
            git(project, "commit", "-q", "-am", f"day {day}", date=f"2026-01-{day:02}T10:00:00+00:00")
        history: list[float] = []
        as_of: list[float] = []
        floor: list[float] = []
        with Router.open(root=root, watch=False) as router:
            for _ in range(args.rounds):
                started = time.perf_counter()
                subprocess.run(["git", "log", "-1", "--format=%H"], cwd=project, check=True, capture_output=True)
                floor.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                versions = router.history(name, 50)
                history.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                old = router.get(name, as_of="2026-01-10")
                as_of.append((time.perf_counter() - started) * 1000)
            searches = _searches(router, args.rounds)
        assert len(versions) == 20 + 1, len(versions)
        assert "change on day 10\n" in old.text and "change on day 11\n" not in old.text, old.text[-200:]
    rows = [("bare `git log -1` process (baseline)", floor), ("history(name), 21 versions", history),
            ("get(name, as_of=date)", as_of)]  # fmt: skip
    firsts, searches = searches[0], searches[1]
    base = percentiles(floor)[0]
    print(f"{'':<40} {'p50 ms':>8} {'p95 ms':>8} {'ratio':>6}")
    for label, samples in rows:
        p50, p95 = percentiles(samples)
        print(f"{label:<40} {p50:>8.1f} {p95:>8.1f} {p50 / base:>6.2f}")
    print(f"(ai-agents-1026 in git, {args.rounds} rounds; history target <= 100 ms)")
    print()
    for label, seconds in firsts.items():
        print(f"{label:<58} {seconds * 1000:>8.0f} ms once")
    live = percentiles(searches["search(q), live index, warm (baseline)"])[0]
    print(f"{'':<58} {'p50 ms':>8} {'p95 ms':>8} {'ratio':>6}")
    for label, samples in searches.items():
        p50, p95 = percentiles(samples)
        print(f"{label:<58} {p50:>8.2f} {p95:>8.2f} {p50 / live:>6.2f}")
    print(f"({len(QUERIES)} queries x {args.rounds} rounds, hybrid mode as configured; as_of warm target p95 <= 30 ms)")


def _searches(router: Router, rounds: int) -> tuple[dict[str, float], dict[str, list[float]]]:
    """First and warm timings of searches as of a date, of time phrases, and of the live index."""
    from memrouter.index.sqlite.recordtime import git_top, refresh_record_times

    firsts: dict[str, float] = {}
    conn = router.workspace.index.conn  # the benchmark reads the cache from a cold start: clear what a search made
    router.search(QUERIES[0])
    conn.execute("DELETE FROM meta WHERE key = 'record_head'")
    started = time.perf_counter()
    refresh_record_times(conn, router.config.root, git_top(router.config.root))
    firsts["commit times of 1,026 memories read from git (first)"] = time.perf_counter() - started
    started = time.perf_counter()
    router.search(QUERIES[0], as_of="2026-01-10")
    firsts["search(q, as_of=date), first: builds the commit's index"] = time.perf_counter() - started
    samples: dict[str, list[float]] = {
        "search(q), live index, warm (baseline)": [],
        "search(q, as_of=date), warm": [],
        "search(q + ' last month'), warm": [],
    }
    for _ in range(rounds):
        for query in QUERIES:
            for label, call in (
                ("search(q), live index, warm (baseline)", lambda q=query: router.search(q)),
                ("search(q, as_of=date), warm", lambda q=query: router.search(q, as_of="2026-01-10")),
                ("search(q + ' last month'), warm", lambda q=query: router.search(q + " last month")),
            ):
                started = time.perf_counter()
                call()
                samples[label].append((time.perf_counter() - started) * 1000)
    return firsts, samples


if __name__ == "__main__":
    main()
