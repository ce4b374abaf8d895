"""The team channel under real processes: exactly-once claims, killed holders, compare-and-set."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memrouter.team import Team
from memrouter.testing.team_workload import claim_until_empty, increment_counter, run_processes

QUEUE = 2000
PROCESSES = 8


def test_eight_processes_drain_a_queue_of_2000_exactly_once(tmp_path: Path) -> None:
    index_dir = tmp_path / ".memrouter"
    with Team.open(index_dir) as team:
        added = {team.task_add(f"task {n}", {"n": n}).id for n in range(QUEUE)}
    reports = run_processes(claim_until_empty, [(str(index_dir), f"agent-{n}") for n in range(PROCESSES)], tmp_path)
    completed = [task for report in reports for task in report["completed"]]
    assert [error for report in reports for error in report["errors"]] == []  # no "database is locked"
    assert len(completed) == len(set(completed)) == QUEUE and set(completed) == added
    with Team.open(index_dir) as team:
        assert team.get_team_state().tasks["done"] == QUEUE
        assert all(task.attempts == 1 for task in team.task_list(["done"]))


def test_leases_of_a_killed_process_come_back_and_are_done_by_others(tmp_path: Path) -> None:
    index_dir = tmp_path / ".memrouter"
    with Team.open(index_dir) as team:
        for n in range(40):
            team.task_add(f"task {n}")
    code = (
        "from memrouter.testing.team_workload import claim_until_empty\n"
        f"claim_until_empty({str(index_dir)!r}, 'doomed', lease=1.5, stop_after=3)\n"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as doomed:
        assert doomed.stdout is not None
        held = doomed.stdout.readline().split()[1:]
        os.kill(doomed.pid, signal.SIGKILL)
    assert len(held) == 3
    time.sleep(1.6)  # past the lease: no heartbeat or release is needed
    reports = run_processes(claim_until_empty, [(str(index_dir), f"agent-{n}") for n in range(2)], tmp_path)
    completed = [task for report in reports for task in report["completed"]]
    assert set(held) <= set(completed) and len(completed) == len(set(completed)) == 40
    with Team.open(index_dir) as team:
        assert {team.task_get(task).attempts for task in held} == {2}


def test_compare_and_set_counter_under_eight_processes(tmp_path: Path) -> None:
    index_dir = tmp_path / ".memrouter"
    with Team.open(index_dir) as team:
        team.team_set("counter", 0)
    reports = run_processes(increment_counter, [(str(index_dir), "counter", 500)] * PROCESSES, tmp_path)
    assert [error for report in reports for error in report["errors"]] == []
    assert sum(report["done"] for report in reports) == PROCESSES * 500
    with Team.open(index_dir) as team:
        final = team.team_get("counter")
    assert final.value == PROCESSES * 500 and final.version == PROCESSES * 500 + 1
    audit = (index_dir / "audit.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["op"] == "team_set" for line in audit) == PROCESSES * 500 + 1
