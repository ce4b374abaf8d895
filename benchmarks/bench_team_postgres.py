"""The team channel on PostgreSQL against ``team.sqlite``, same workload, same run: claim+complete pairs per second.

A real PostgreSQL 18 (``memrouter.testing.postgres_server``) on this
machine; each process is its own interpreter with its own connection pool.
Every process claims (``FOR UPDATE SKIP LOCKED``) and completes tasks until
the queue is empty; each row checks that every task was completed exactly
once. The baseline is the same workload on ``team.sqlite`` (one writer at a
time), measured in the same run.

    .venv/bin/python benchmarks/bench_team_postgres.py [--tasks 1000] [--processes 1,4,8]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench_team import claims

from memrouter.testing.postgres_server import running_postgres


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--processes", default="1,4,8")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    with tempfile.TemporaryDirectory() as tmp, running_postgres() as server:
        print(f"claim+complete, {args.tasks} tasks")
        for processes in counts:
            rows = {}
            for store in ("sqlite", "postgres"):
                folder = Path(tmp) / f"{store}-{processes}"
                folder.mkdir()
                options = {"database": server.url, "project": f"bench-{processes}"} if store == "postgres" else None
                rows[store] = claims(folder, processes, args.tasks, options)
            for store, r in rows.items():
                ratio = r["pairs_per_s"] / rows["sqlite"]["pairs_per_s"]
                print(
                    f"  {processes} process(es) {store:8}: {r['pairs_per_s']:7.0f} pairs/s ({ratio:4.2f}x team.sqlite)  "
                    f"p50 {r['p50_ms']:6.2f} ms  p95 {r['p95_ms']:6.2f} ms  errors {r['errors']}  "
                    f"exactly once: {r['exactly_once']}  retried {r['busy_waits']}"
                )


if __name__ == "__main__":
    main()
