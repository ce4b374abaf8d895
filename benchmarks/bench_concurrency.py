"""Many processes on one project: saves per second and search latency with 1, 4 and 8 processes.

Each process is a separate interpreter running ``memrouter.testing.workload``
(saves, edits and searches of its own) against a copy of the ai-agents-1026
corpus and one shared index. The one-process run is the baseline; each row
prints its ratio to it. Busy waits count the write transactions that found
another process holding the index's write lock and had to wait for it.

    .venv/bin/python benchmarks/bench_concurrency.py [--ops 200] [--processes 1,4,8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import CORPUS, percentiles

from memrouter.testing.workload import worker_command

MIX = {"save": 40, "edit": 10, "search": 50}


def run_phase(root: Path, index_dir: Path, processes: int, ops: int, work: Path) -> dict[str, float]:
    reports = [work / f"p{processes}-w{n}.json" for n in range(processes)]
    started = time.perf_counter()
    running = [
        subprocess.Popen(
            worker_command(root, index_dir, 100 * processes + n, ops, reports[n], modes="lexical,hybrid", mix=MIX)
        )
        for n in range(processes)
    ]
    codes = [p.wait() for p in running]
    elapsed = time.perf_counter() - started
    if any(codes):
        raise SystemExit(f"a worker failed: exit codes {codes}")
    saves: list[float] = []
    searches: list[float] = []
    busy = 0
    for path in reports:
        data = json.loads(path.read_text(encoding="utf-8"))
        saves += data["save_ms"]
        searches += data["search_ms"]
        busy += data["busy_waits"]
    save_p50, save_p95 = percentiles(saves)
    search_p50, search_p95 = percentiles(searches)
    return {
        "processes": processes,
        "saves": len(saves),
        "saves_per_s": len(saves) / elapsed,
        "save_p50_ms": save_p50,
        "save_p95_ms": save_p95,
        "search_p50_ms": search_p50,
        "search_p95_ms": search_p95,
        "busy_waits": busy,
        "seconds": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=200, help="operations per process")
    parser.add_argument("--processes", default="1,4,8")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as temp:
        work = Path(temp)
        project = work / "project"
        root = project / ".serena" / "memories"
        shutil.copytree(CORPUS, root)
        (project / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n', encoding="utf-8")
        index_dir = project / ".memrouter"
        subprocess.run(
            [sys.executable, "-m", "memrouter", "--root", str(root), "--index-dir", str(index_dir), "index"],
            check=True, capture_output=True,
        )  # fmt: skip
        rows = [run_phase(root, index_dir, int(n), args.ops, work) for n in args.processes.split(",")]
    base = rows[0]
    print(
        f"{'processes':>9} {'saves/s':>9} {'ratio':>6} {'save p50':>9} {'save p95':>9} {'search p50':>11} {'search p95':>11} {'p95 ratio':>10} {'busy waits':>11}"
    )
    for row in rows:
        print(
            f"{row['processes']:>9} {row['saves_per_s']:>9.1f} {row['saves_per_s'] / base['saves_per_s']:>6.2f} "
            f"{row['save_p50_ms']:>7.2f}ms {row['save_p95_ms']:>7.2f}ms {row['search_p50_ms']:>9.2f}ms "
            f"{row['search_p95_ms']:>9.2f}ms {row['search_p95_ms'] / base['search_p95_ms']:>10.2f} {row['busy_waits']:>11}"
        )
    print(f"(ai-agents-1026, {args.ops} operations per process: {MIX}; baseline: the first row)")


if __name__ == "__main__":
    main()
