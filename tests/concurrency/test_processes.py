"""Many real processes on one project: nothing acknowledged is ever lost.

Workers are separate interpreters (``memrouter.testing.workload``), an MCP
server runs as a subprocess, and CLI searches run as processes, all at once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from memrouter import Router

MEMROUTER = [sys.executable, "-m", "memrouter"]
WORKERS = 8
OPS = 300
# The CLI searches and the MCP session pause this long between rounds: a few dozen of each overlap the
# workers' writes, and they leave the workers the CPU (run flat out, they doubled the test's time).
PACE = 0.25


def make_project(base: Path) -> tuple[Path, Path]:
    """A git project with an empty memories folder and the hash embedder (semantic search without a model)."""
    project = base / "project"
    root = project / ".serena" / "memories"
    root.mkdir(parents=True)
    (project / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n', encoding="utf-8")
    (project / ".gitignore").write_text(".memrouter/\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (root / "seed.md").write_text("# Seed\n\npostgres cache deploy\n", encoding="utf-8")
    return project, root


@pytest.mark.long
def test_many_processes_mixed_operations_lose_nothing(tmp_path: Path) -> None:
    project, root = make_project(tmp_path)
    index_dir = project / ".memrouter"
    stop = threading.Event()
    cli_codes: list[tuple[int, str]] = []
    mcp_errors: list[str] = []
    mcp_saved: dict[str, str] = {}

    def cli_searches() -> None:
        queries = ["postgres", "flaky retry", "tok1x4", "schema index", "cache"]
        count = 0
        while not stop.is_set():
            done = subprocess.run(
                [*MEMROUTER, "search", queries[count % len(queries)], "--mode", "lexical", "--format", "json"],
                cwd=project, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            cli_codes.append((done.returncode, done.stderr[-500:]))
            count += 1
            stop.wait(PACE)

    def mcp_session() -> None:
        async def run() -> None:
            from mcp import Client, StdioServerParameters

            params = StdioServerParameters(
                command=sys.executable, args=["-m", "memrouter", "serve", "--tools", "core,serena"], cwd=str(project)
            )
            async with Client(params) as client:
                number = 0
                while not stop.is_set():
                    number += 1
                    name = f"mcp/note-{number}"
                    # grounded (an issue reference), so the write guard stores it as given, not pending review
                    text = f"# MCP note {number}\n\nmcpword{number} handoff review (#{number})\n"
                    written = await client.call_tool("write_memory", {"memory_name": name, "content": text})
                    if written.is_error:
                        mcp_errors.append(written.content[0].text)
                        continue
                    mcp_saved[name] = text
                    for mode in ("lexical", "hybrid", "semantic"):
                        found = await client.call_tool("search_memory", {"query": f"mcpword{number}", "mode": mode})
                        if found.is_error:
                            mcp_errors.append(found.content[0].text)
                    await anyio.sleep(PACE)

        try:
            anyio.run(run)
        except BaseException as exc:  # reported through mcp_errors and asserted below
            mcp_errors.append(repr(exc))

    helpers = [threading.Thread(target=cli_searches), threading.Thread(target=mcp_session)]
    for thread in helpers:
        thread.start()
    reports = [tmp_path / f"worker-{n}.json" for n in range(WORKERS)]
    from memrouter.testing.workload import worker_command

    workers = [
        subprocess.Popen(worker_command(root, index_dir, n, OPS, reports[n], seed=7), stderr=subprocess.PIPE, text=True)
        for n in range(WORKERS)
    ]
    failures = []
    for number, worker in enumerate(workers):
        _, stderr = worker.communicate(timeout=600)
        if worker.returncode != 0:
            failures.append(f"worker {number} exited {worker.returncode}: {stderr[-2000:]}")
    time.sleep(0.5)  # let the server and the CLI loop overlap the last writes
    stop.set()
    for thread in helpers:
        thread.join(timeout=120)
    assert not failures, failures
    assert not mcp_errors, mcp_errors
    assert len(mcp_saved) >= 3, "the MCP session ran alongside the workers"
    assert len(cli_codes) >= 3 and all(code == 0 for code, _ in cli_codes), [c for c in cli_codes if c[0]]

    owned: dict[str, str] = dict(mcp_saved)
    shared_lines: list[str] = []
    for path in reports:
        report = json.loads(path.read_text(encoding="utf-8"))
        assert report["error"] is None, report["error"]
        owned.update(report["files"])
        shared_lines += report["shared_lines"]
    lost = [
        name
        for name, text in owned.items()
        if not (root / f"{name}.md").is_file() or (root / f"{name}.md").read_text(encoding="utf-8") != text
    ]
    assert lost == []
    log = (root / "shared/log.md").read_text(encoding="utf-8")
    assert [line for line in shared_lines if log.count(f"{line}\n") != 1] == []
    assert len(shared_lines) > 50

    on_disk = {p.relative_to(root).as_posix()[:-3] for p in root.rglob("*.md") if ".memrouter-write" not in p.parts}
    assert on_disk == {*owned, "seed", "shared/log"}
    with Router.open(root=root, index_dir=index_dir, watch=False) as router:
        assert {item.name for item in router.list()} == on_disk
        for name in sorted(owned)[:: max(1, len(owned) // 40)]:
            title = router.get(name).title
            assert name in [hit.name for hit in router.search(title, limit=10, mode="lexical")]
        status = router.status()
        assert status["index"]["mode"] == "file" and not status["index"]["kept_damaged_files"]
    assert not list(index_dir.glob("index.sqlite.corrupt-*"))
    assert list((root / ".memrouter-write" / "tmp").iterdir()) == []


def test_two_processes_with_the_same_expected_hash_never_both_win(tmp_path: Path) -> None:
    from memrouter.testing.workload import race_expected_hash

    _, root = make_project(tmp_path)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    rounds = 40
    rivals = [
        context.Process(target=race_expected_hash, args=(str(root), str(tmp_path / "idx"), rounds, barrier, results, n))
        for n in (1, 2)
    ]
    for rival in rivals:
        rival.start()
    outcomes = [results.get(timeout=120) for _ in range(2 * rounds)]
    for rival in rivals:
        rival.join(timeout=60)
        assert rival.exitcode == 0
    for number in range(rounds):
        this_round = sorted(outcome for _, n, outcome in outcomes if n == number)
        assert this_round == ["conflict", "ok"], (number, this_round)
    text = (root / "race.md").read_text(encoding="utf-8")
    assert text.count("round ") == rounds


@pytest.mark.long
def test_cli_read_then_conditional_save_loses_nothing(tmp_path: Path) -> None:
    project, root = make_project(tmp_path)
    # $PY reads the JSON: this interpreter (a ``python3`` on PATH may be a version manager's shim, 0.1 s a call)
    script = (
        "for i in $(seq 1 6); do\n"
        "  while true; do\n"
        f'    json=$({" ".join(MEMROUTER)} get shared --format json 2>/dev/null) || json=\'{{"hash": "", "content": "# Shared\\\\n"}}\'\n'
        '    hash=$(printf %s "$json" | "$PY" -c \'import json,sys; print(json.load(sys.stdin)["hash"])\')\n'
        '    text=$(printf %s "$json" | "$PY" -c \'import json,sys; print(json.load(sys.stdin)["content"], end="")\')\n'
        f'    if {" ".join(MEMROUTER)} save shared --content "$text\nline $W-$i" --expected-hash "$hash" >/dev/null 2>&1; then\n'
        '      echo "line $W-$i"; break\n'
        "    fi\n"
        "  done\n"
        "done\n"
    )
    processes = [
        subprocess.Popen(
            ["bash", "-c", script],
            cwd=project,
            env={**os.environ, "W": str(n), "PY": sys.executable},
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    acknowledged = [line for p in processes for line in p.communicate(timeout=300)[0].splitlines()]
    assert all(p.returncode == 0 for p in processes)
    assert len(acknowledged) == 12
    text = (root / "shared.md").read_text(encoding="utf-8")
    assert [line for line in acknowledged if f"{line}\n" not in f"{text}\n"] == []


def test_six_processes_starting_on_a_new_project(tmp_path: Path) -> None:
    for attempt in range(3):
        project, root = make_project(tmp_path / f"run-{attempt}")
        processes = [
            subprocess.Popen([*MEMROUTER, "save", f"n{n}", "--content", f"# n{n}"], cwd=project,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in range(6)
        ]  # fmt: skip
        results: list[Any] = [p.communicate(timeout=120) for p in processes]
        assert [p.returncode for p in processes] == [0] * 6, [err for _, err in results]
        with Router.open(root=root, index_dir=project / ".memrouter", watch=False) as router:
            assert {item.name for item in router.list()} == {"seed", *(f"n{n}" for n in range(6))}
        assert not list((project / ".memrouter").glob("index.sqlite.corrupt-*"))


def test_two_processes_opening_a_sprint_at_once_open_one(tmp_path: Path) -> None:
    for attempt in range(3):
        project, root = make_project(tmp_path / f"run-{attempt}")
        rivals = [
            subprocess.Popen([*MEMROUTER, "sprint", "start", f"s{n}"], cwd=project, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for n in (1, 2)
        ]  # fmt: skip
        results = [p.communicate(timeout=120) for p in rivals]
        codes = sorted(p.returncode for p in rivals)
        assert codes[0] == 0 and codes[1] != 0, results
        assert len(list((root / "sprints").glob("*/_sprint.md"))) == 1


def test_a_sprint_closing_while_others_save_into_it_leaves_nothing_behind(tmp_path: Path) -> None:
    project, root = make_project(tmp_path)
    subprocess.run([*MEMROUTER, "sprint", "start", "s1"], cwd=project, check=True, capture_output=True)
    saver = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys\nfrom memrouter import Router\nfrom memrouter.core.errors import InvalidInput\n"
            "with Router.open(root=sys.argv[1], index_dir=sys.argv[2], watch=False) as router:\n"
            "    for n in range(60):\n"
            "        try:\n"
            "            router.save(f'# Note {n}\\n\\nfinding {n}\\n', kind='research')\n"
            "        except InvalidInput:\n"
            "            print('closed', n, flush=True)\n"
        ), str(root), str(project / ".memrouter")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(0.3)
    closed = subprocess.run(
        [*MEMROUTER, "sprint", "close", "--archive-rest"], cwd=project, capture_output=True, text=True
    )
    out, _ = saver.communicate(timeout=120)
    assert closed.returncode == 0, closed.stderr
    assert saver.returncode == 0
    with Router.open(root=root, index_dir=project / ".memrouter", watch=False) as router:
        left = [
            item.name for item in router.list("sprints/s1/") if item.status != "archived" and "_sprint" not in item.name
        ]
    assert left == []  # every note saved before the close is archived; after it, saves are refused


def test_rival_promotions_and_invalidations_of_one_sprint_memory_apply_once(tmp_path: Path) -> None:
    for attempt in range(3):
        project, root = make_project(tmp_path / f"run-{attempt}")
        subprocess.run([*MEMROUTER, "sprint", "start", "s1"], cwd=project, check=True, capture_output=True)
        subprocess.run([*MEMROUTER, "save", "probe", "--kind", "research", "--content", "# Probe\n\np99 2 ms"],
                       cwd=project, check=True, capture_output=True)  # fmt: skip
        commands = [
            ["promote", "sprints/s1/probe", "--reason", "settled", "--as", "probe-a"],
            ["promote", "sprints/s1/probe", "--reason", "settled", "--as", "probe-b"],
            ["invalidate", "sprints/s1/probe", "--reason", "wrong"],
        ]
        rivals = [
            subprocess.Popen([*MEMROUTER, *command], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
            for command in commands
        ]  # fmt: skip
        results = [p.communicate(timeout=120) for p in rivals]
        won = [command for command, p in zip(commands, rivals, strict=True) if p.returncode == 0]
        assert len(won) >= 1, results
        promoted = [name for name in ("probe-a", "probe-b") if (root / f"{name}.md").exists()]
        assert len(promoted) <= 1, promoted  # a memory is promoted once, never twice
        with Router.open(root=root, index_dir=project / ".memrouter", watch=False) as router:
            source = router.get("sprints/s1/probe")
            if promoted:
                assert source.superseded_by == promoted[0]
                assert "p99 2 ms" in router.get(promoted[0]).text
            assert [p.returncode for p in rivals].count(0) == len(promoted) + ("obsolete" == source.status)


def test_processes_reading_commit_times_while_commits_land_agree_with_a_fresh_read(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    from helpers import commit

    project, root = make_project(tmp_path)
    commit(project, "seed", "2026-01-01T10:00:00+00:00")
    script = (
        "import sys\nfrom memrouter import Router\n"
        "with Router.open(root=sys.argv[1], index_dir=sys.argv[2], watch=False) as router:\n"
        "    for _ in range(40):\n"
        "        router.search('notes changed this year', mode='lexical')\n"
    )
    readers = [
        subprocess.Popen([sys.executable, "-c", script, str(root), str(project / ".memrouter")],
                         stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]  # fmt: skip
    for day in range(2, 12):
        (root / f"note-{day % 4}.md").write_text(f"# Note\n\nchanged on day {day}\n")
        commit(project, f"day {day}", f"2026-01-{day:02}T10:00:00+00:00")
    errors = [p.communicate(timeout=120)[1] for p in readers]
    assert [p.returncode for p in readers] == [0] * 4, errors
    with Router.open(root=root, index_dir=project / ".memrouter", watch=False) as router:
        router.search("notes changed this year", mode="lexical")  # brings the shared table up to HEAD
    with Router.open(root=root, index_dir=tmp_path / "fresh", watch=False) as router:
        router.search("notes changed this year", mode="lexical")  # one process, from scratch
    rows = "SELECT name, created, updated, commits FROM record_times ORDER BY name"
    with closing(sqlite3.connect(project / ".memrouter" / "index.sqlite")) as conn:
        shared = conn.execute(rows).fetchall()
    with closing(sqlite3.connect(tmp_path / "fresh" / "index.sqlite")) as conn:
        fresh = conn.execute(rows).fetchall()
    assert shared == fresh and len(fresh) >= 5
