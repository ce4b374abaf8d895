"""The team channel under many processes: claim+complete pairs and set+get pairs per second, p95.

Each process is a separate interpreter (``multiprocessing`` spawn) with its
own connection to one ``team.sqlite``. Claim/complete: 2,000 queued tasks,
every process claims and completes until the queue is empty; the run checks
that every task was completed exactly once. Set/get: each process sets and
reads back its own keys. The baseline, measured in the same run, is a bare
SQLite loop in one process: one ``BEGIN IMMEDIATE`` + insert + commit per
operation on a WAL file, which is what one team operation costs at least.

    .venv/bin/python benchmarks/bench_team.py [--tasks 2000] [--sets 1000] [--processes 1,4,8]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import percentiles

from memrouter.team import Team
from memrouter.testing.team_workload import claim_until_empty, run_processes, set_and_get


def bare_sqlite(folder: Path, count: int) -> tuple[float, float]:
    """(operations per second, p95 ms) of BEGIN IMMEDIATE + INSERT + COMMIT on a WAL file."""
    conn = sqlite3.connect(folder / "bare.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    latencies = []
    began = time.perf_counter()
    for number in range(count):
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (v) VALUES (?)", (f"value {number}",))
        conn.execute("COMMIT")
        latencies.append(time.perf_counter() - t0)
    took = time.perf_counter() - began
    conn.close()
    return count / took, percentiles(latencies)[1] * 1000


def claims(folder: Path, processes: int, count: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Claim+complete ``count`` tasks with ``processes`` processes (``options``: ``database`` and ``project``)."""
    index_dir = folder / f"claims-{processes}"
    with Team.open(index_dir, **(options or {})) as team:
        for number in range(count):
            team.task_add(f"task {number}", {"n": number})
    reports = run_processes(
        claim_until_empty, [(str(index_dir), f"agent-{n}") for n in range(processes)], folder, options=options
    )
    done = [task for r in reports for task in r["completed"]]
    latencies = [x for r in reports for x in r["latencies"]]
    wall = max(r["took"] for r in reports)
    return {
        "pairs_per_s": len(done) / wall, "p50_ms": percentiles(latencies)[0] * 1000,
        "p95_ms": percentiles(latencies)[1] * 1000, "errors": sum(len(r["errors"]) for r in reports),
        "exactly_once": len(done) == len(set(done)) == count, "busy_waits": sum(r["busy_waits"] for r in reports),
    }  # fmt: skip


def sets(folder: Path, processes: int, count: int) -> dict[str, Any]:
    index_dir = folder / f"sets-{processes}"
    Team.open(index_dir).close()
    reports = run_processes(set_and_get, [(str(index_dir), f"agent-{n}", count) for n in range(processes)], folder)
    latencies = [x for r in reports for x in r["latencies"]]
    wall = max(r["took"] for r in reports)
    return {
        "pairs_per_s": len(latencies) / wall, "p50_ms": percentiles(latencies)[0] * 1000,
        "p95_ms": percentiles(latencies)[1] * 1000, "errors": sum(len(r["errors"]) for r in reports),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--sets", type=int, default=1000, help="set+get pairs per process")
    parser.add_argument("--processes", default="1,4,8")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rate, p95 = bare_sqlite(folder, 2000)
        print(f"baseline: bare SQLite BEGIN IMMEDIATE+INSERT+COMMIT, 1 process: {rate:8.0f} ops/s  p95 {p95:6.2f} ms")
        print(
            f"\nclaim+complete, {args.tasks} tasks (target with 8 processes: >= 1500 pairs/s, p95 <= 25 ms, 0 errors)"
        )
        first: float | None = None
        for processes in counts:
            r = claims(folder, processes, args.tasks)
            first = first or r["pairs_per_s"]
            print(
                f"  {processes} process(es): {r['pairs_per_s']:7.0f} pairs/s ({r['pairs_per_s'] / first:4.2f}x the first row, "
                f"{2 * r['pairs_per_s'] / rate:4.2f}x baseline ops)  p50 {r['p50_ms']:6.2f} ms  p95 {r['p95_ms']:6.2f} ms  "
                f"errors {r['errors']}  exactly once: {r['exactly_once']}  busy waits {r['busy_waits']}"
            )
        print(f"\nset+get, {args.sets} pairs per process")
        first = None
        for processes in counts:
            r = sets(folder, processes, args.sets)
            first = first or r["pairs_per_s"]
            print(
                f"  {processes} process(es): {r['pairs_per_s']:7.0f} pairs/s ({r['pairs_per_s'] / first:4.2f}x the first row)  "
                f"p50 {r['p50_ms']:6.2f} ms  p95 {r['p95_ms']:6.2f} ms  errors {r['errors']}"
            )


if __name__ == "__main__":
    main()
