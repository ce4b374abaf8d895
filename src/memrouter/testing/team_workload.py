"""Workers for the team channel's process tests and benchmark: each runs in its own interpreter.

Every worker opens its own ``Team`` on the shared index folder, waits for
the ``start`` event so all begin together, and returns a JSON-ready report:
what it did, each operation's latency, and every error that reached it (a
"database is locked" would show here as a ``StorageError``).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrouter.core.errors import MemoryRouterError, VersionConflict
from memrouter.team import Team

__all__ = ["claim_until_empty", "increment_counter", "run_processes", "set_and_get"]


def _wait(start: Any) -> None:
    if start is not None:
        start.wait()


def _open(index_dir: str, database: str | None, project: str | None) -> Team:
    """The team channel in ``index_dir`` (``team.sqlite``), or in PostgreSQL at ``database`` under ``project``."""
    return Team.open(Path(index_dir), database=database, project=project)


def claim_until_empty(
    index_dir: str,
    agent: str,
    lease: float = 60.0,
    start: Any = None,
    stop_after: int | None = None,
    *,
    database: str | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """Claim and complete tasks until the queue is empty (or ``stop_after`` claims, leaving them held)."""
    completed: list[str] = []
    held: list[str] = []
    latencies: list[float] = []
    errors: list[str] = []
    with _open(index_dir, database, project) as team:
        team.register(agent, ttl=3600)
        _wait(start)
        began = time.perf_counter()
        while True:
            try:
                t0 = time.perf_counter()
                task = team.task_claim(agent, lease_seconds=lease)
                if task is None:
                    break
                if stop_after is not None and len(held) < stop_after:
                    held.append(task.id)
                    if len(held) == stop_after:
                        print("HELD", *held, flush=True)
                        time.sleep(3600)  # killed here by the test
                    continue
                team.task_complete(task.id, {"by": agent}, agent_id=agent)
                latencies.append(time.perf_counter() - t0)
                completed.append(task.id)
            except MemoryRouterError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        took = time.perf_counter() - began
        waits = team.busy_waits
    return {
        "agent": agent,
        "completed": completed,
        "latencies": latencies,
        "errors": errors,
        "took": took,
        "busy_waits": waits,
    }


def increment_counter(
    index_dir: str, key: str, times: int, start: Any = None, *, database: str | None = None, project: str | None = None
) -> dict[str, Any]:
    """Add one to the counter ``key`` ``times`` times with compare-and-set, retrying on conflicts."""
    conflicts = 0
    errors: list[str] = []
    with _open(index_dir, database, project) as team:
        _wait(start)
        done = 0
        while done < times:
            try:
                current = team.team_get(key)
                team.team_set(key, current.value + 1, expected_version=current.version)
                done += 1
            except VersionConflict:
                conflicts += 1
            except MemoryRouterError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                break
    return {"done": done, "conflicts": conflicts, "errors": errors}


def set_and_get(index_dir: str, agent: str, count: int, start: Any = None) -> dict[str, Any]:
    """Set and read back ``count`` variables of this agent's own."""
    latencies: list[float] = []
    errors: list[str] = []
    with Team.open(Path(index_dir)) as team:
        _wait(start)
        began = time.perf_counter()
        for number in range(count):
            try:
                t0 = time.perf_counter()
                key = f"{agent}/{number % 50}"
                team.team_set(key, {"n": number})
                if team.team_get(key).value != {"n": number}:
                    errors.append(f"read back a different value for {key}")
                latencies.append(time.perf_counter() - t0)
            except MemoryRouterError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        took = time.perf_counter() - began
    return {"agent": agent, "latencies": latencies, "errors": errors, "took": took}


def _report_to_file(
    target: Callable[..., dict[str, Any]], args: tuple[Any, ...], start: Any, out: str, options: dict[str, Any]
) -> None:
    report = target(*args, start=start, **options)
    Path(out).write_text(json.dumps(report), encoding="utf-8")


def run_processes(
    target: Callable[..., dict[str, Any]],
    argsets: list[tuple[Any, ...]],
    folder: Path,
    *,
    timeout: float = 600,
    options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run ``target(*args, start=event, **options)`` in one spawned interpreter per argument tuple, all
    released together once every one has started; returns their reports (a missing report is an error)."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    outs = [folder / f"report-{target.__name__}-{n}.json" for n in range(len(argsets))]
    procs = [
        ctx.Process(target=_report_to_file, args=(target, args, start, str(out), options or {}))
        for args, out in zip(argsets, outs, strict=True)
    ]
    for proc in procs:
        proc.start()
    time.sleep(0.5 + 0.15 * len(procs))  # let the interpreters start and open the file before the race
    start.set()
    for proc in procs:
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
    reports = []
    for proc, out in zip(procs, outs, strict=True):
        if not out.exists():
            raise RuntimeError(f"worker {proc.pid} exited with {proc.exitcode} and no report")
        reports.append(json.loads(out.read_text(encoding="utf-8")))
        out.unlink()
    return reports
