"""One process's mixed workload against one project, for the concurrency tests and benchmark.

Run several at once, each as its own process::

    python -m memrouter.testing.workload --root R --index-dir I --worker 3 --ops 300 --out w3.json

Each worker saves, edits, renames and deletes memories of its own
(``w<N>/...``), appends lines to one shared memory with ``expected_hash``
(retrying on ``Conflict``), searches in every mode and refreshes. It checks
its own writes as it goes (a memory it just saved is found by its unique
word) and writes what it holds acknowledged to ``--out`` as JSON: the final
text of every memory it owns, the shared lines it added, its timings and the
index's busy-wait count. Any unexpected error ends the worker with exit
code 1 and the traceback in the report.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from memrouter.core.errors import Conflict, NotFound
from memrouter.router import Router

__all__ = ["SHARED", "WorkloadReport", "main", "run_workload", "worker_command"]

SHARED = "shared/log"
# Operation weights (out of 100).
DEFAULT_MIX = {
    "save": 30,
    "edit": 12,
    "rename": 5,
    "delete": 8,
    "append": 10,
    "search": 30,
    "refresh": 5,
}
WORDS = (
    "postgres cache deploy flaky retry queue schema index token budget channel sprint "
    "handoff review latency vector lexical hybrid migration rollback incident"
).split()


class WorkloadReport:
    """What one worker did and holds acknowledged (``to_dict`` is the JSON written to ``--out``)."""

    def __init__(self, worker: int) -> None:
        self.worker = worker
        self.files: dict[str, str] = {}  # name -> text of every memory this worker owns now
        self.deleted: list[str] = []
        self.shared_lines: list[str] = []
        self.counts: dict[str, int] = {}
        self.conflicts = 0
        self.save_ms: list[float] = []
        self.search_ms: list[float] = []
        self.busy_waits = 0
        self.error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "files": self.files,
            "deleted": self.deleted,
            "shared_lines": self.shared_lines,
            "counts": self.counts,
            "conflicts": self.conflicts,
            "save_ms": self.save_ms,
            "search_ms": self.search_ms,
            "busy_waits": self.busy_waits,
            "error": self.error,
        }


def run_workload(
    root: Path,
    index_dir: Path,
    worker: int,
    ops: int,
    *,
    seed: int = 0,
    mix: dict[str, int] | None = None,
    modes: tuple[str, ...] = ("lexical", "hybrid", "semantic"),
) -> WorkloadReport:
    """Run ``ops`` operations as worker ``worker``; see the module docstring."""

    rng = random.Random(seed * 1000 + worker)
    weights = mix or DEFAULT_MIX
    kinds = list(weights)
    report = WorkloadReport(worker)
    serial = 0
    with Router.open(root=root, index_dir=index_dir, watch=worker % 2 == 0) as router:
        for _ in range(ops):
            op = rng.choices(kinds, [weights[k] for k in kinds])[0]
            owned = sorted(report.files)
            if op in ("edit", "rename", "delete") and not owned:
                op = "save"
            report.counts[op] = report.counts.get(op, 0) + 1
            if op == "save":
                serial += 1
                name = f"w{worker}/note-{serial}"
                token = f"tok{worker}x{serial}"
                text = f"# Note {serial} of worker {worker}\n\n{token} {' '.join(rng.sample(WORDS, 6))}\n"
                started = time.perf_counter()
                memory = router.save(text, name)
                report.save_ms.append((time.perf_counter() - started) * 1000)
                report.files[memory.name] = text
                if serial % 4 == 0:  # read your own write, through the index
                    hits = router.search(token, limit=3, mode="lexical")
                    if not hits or hits[0].name != memory.name:
                        raise AssertionError(f"{memory.name} was saved but a search for {token} found {hits}")
            elif op == "edit":
                name = rng.choice(owned)
                word = rng.choice(WORDS)
                memory, _ = router.edit(name, "\n", f" {word}\n", mode="literal", allow_multiple_occurrences=True)
                report.files[name] = memory.text
            elif op == "rename":
                old = rng.choice(owned)
                serial += 1
                new = f"w{worker}/moved-{serial}"
                moved, _ = router.rename(old, new)
                report.files[moved.name] = report.files.pop(old)
            elif op == "delete":
                name = rng.choice(owned)
                router.delete(name, reason="workload")
                report.files.pop(name)
                report.deleted.append(name)
            elif op == "append":
                line = f"line {worker}-{report.counts[op]}"
                for _attempt in range(200):
                    try:
                        current = router.get(SHARED)
                        text, expected = current.text, current.hash
                    except NotFound:  # the first writer creates it
                        text, expected = "# Shared log\n\n", ""
                    try:
                        router.save(text + line + "\n", SHARED, expected_hash=expected)
                    except Conflict:
                        report.conflicts += 1
                        time.sleep(rng.uniform(0, 0.01))
                        continue
                    report.shared_lines.append(line)
                    break
                else:
                    raise AssertionError(f"worker {worker} could not append after 200 conflicts")
            elif op == "search":
                mode = rng.choice(modes)
                query = " ".join(rng.sample(WORDS, 2))
                started = time.perf_counter()
                router.search(query, limit=5, mode=mode)
                report.search_ms.append((time.perf_counter() - started) * 1000)
            else:
                router.refresh()
        report.busy_waits = router.workspace.conn.busy_waits
    return report


def worker_command(
    root: Path,
    index_dir: Path,
    worker: int,
    ops: int,
    out: Path,
    *,
    seed: int = 0,
    modes: str = "lexical,hybrid,semantic",
    mix: dict[str, int] | None = None,
) -> list[str]:
    """The command line that runs one worker as its own interpreter (for ``subprocess.Popen``)."""
    command = [
        sys.executable, "-m", "memrouter.testing.workload", "--root", str(root), "--index-dir", str(index_dir),
        "--worker", str(worker), "--ops", str(ops), "--seed", str(seed), "--modes", modes, "--out", str(out),
    ]  # fmt: skip
    return command + (["--mix", json.dumps(mix)] if mix else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--worker", type=int, required=True)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="lexical,hybrid,semantic")
    parser.add_argument("--mix", default=None, help="JSON object of operation weights")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    mix = json.loads(args.mix) if args.mix else None
    report = WorkloadReport(args.worker)
    code = 0
    try:
        report = run_workload(
            args.root, args.index_dir, args.worker, args.ops, seed=args.seed, mix=mix,
            modes=tuple(args.modes.split(",")),
        )  # fmt: skip
    except BaseException:
        report.error = traceback.format_exc()
        code = 1
    args.out.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    if report.error:
        print(report.error, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())


def race_expected_hash(root: str, index_dir: str, rounds: int, barrier: Any, results: Any, worker: int) -> None:
    """Each round: read ``race``, wait at ``barrier`` for the rival, save with the hash read.

    Puts ``(worker, round, "ok" | "conflict")`` on ``results``; with a
    correct store exactly one of two rivals succeeds each round.
    """

    with Router.open(root=root, index_dir=index_dir, watch=False) as router:
        for number in range(rounds):
            try:
                current = router.get("race")
                text, expected = current.text, current.hash
            except NotFound:
                text, expected = "# Race\n\n", ""
            barrier.wait(timeout=60)
            try:
                router.save(text + f"round {number} by {worker}\n", "race", expected_hash=expected)
                results.put((worker, number, "ok"))
            except Conflict:
                results.put((worker, number, "conflict"))
            barrier.wait(timeout=60)
