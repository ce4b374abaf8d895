"""The performance budget: every speed target measured against its baseline in the same run, in one table.

Each row times memrouter beside a yardstick run in the same run, so a busy
machine moves both, and judges the ratio (or, where the target is a time,
the time) against its target:

- cold CLI: a whole ``memrouter search --mode lexical --format json``
  process on ai-agents-1026 (index built, bytecode compiled, as an installed
  package has it), interleaved with a bare ``python -c pass``; target 4x;
- warm lexical search p50 over the golden questions of ai-agents-1026,
  against the upstream router's rule (query words in file paths) in the same
  process; target 0.4x;
- MCP start: ``memrouter serve`` over stdio, spawn to the answer of
  ``list_memories`` by the official SDK client, interleaved with the real
  Serena 2.1.0 launched the same way (``make interop-setup`` installs it)
  and with a bare import of the MCP SDK; memrouter's own part (its time
  less the SDK's import) targets 150 ms;
- lexical search at 100,000 memories, warm, p95 and p99 beside SQLite FTS5's
  on the same documents (``bench_scale.py``); targets 25 ms and 60 ms;
- hybrid search p95 on ai-agents-1026 (vectors built once into the cache),
  target 12.6 ms, and the lexical full build (an FTS5 build of the same texts
  beside it), target 3 s;
- with ``--suite``: the test suite's time (``make test``'s pytest), target
  150 s (it takes minutes, so only when asked).

A time target stated for the machine the README's figures came from is scaled
by this machine's speed, measured as the bare interpreter's start in the same
run against the 12 ms it took there. The first run builds the caches (the
100,000-memory corpus and ai-agents-1026's vectors: minutes); later runs reuse
them and take under three minutes. Exits 1 when a row is over its target.

Usage: .venv/bin/python benchmarks/bench_budget.py [--cache DIR] [--suite] [--only ROW,...]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import CORPUS, percentile, percentiles

import memrouter
from memrouter import Router

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "benchmarks" / "golden" / "ai-agents-1026.json"
SERENA = ROOT / "interop" / ".work" / "serena-venv" / "bin" / "serena"
# The bare interpreter's start on the machine the README's time targets were measured on (2 cores, quiet).
REFERENCE_BARE_MS = 12.0


def _silent(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """Run ``argv`` to its end; its wall and CPU (user + system) milliseconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000


def _env() -> dict[str, str]:
    """The environment of a user's shell: bytecode written and read, no memrouter settings inherited."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def golden_questions() -> list[str]:
    return [str(item["query"]) for item in json.loads(GOLDEN.read_text(encoding="utf-8"))["queries"]]


def built_index(cache: Path, *, embed: bool) -> Path:
    """ai-agents-1026's index in the cache (with vectors when ``embed``), built on first use."""
    index_dir = cache / ("ai-agents-1026-hybrid" if embed else "ai-agents-1026")
    with Router.open(root=CORPUS, index_dir=index_dir, watch=False) as router:
        router.refresh(embed=embed)
    return index_dir


# -- rows ------------------------------------------------------------------
def cold_cli(cache: Path, runs: int = 11) -> dict[str, Any]:
    index_dir = built_index(cache, embed=False)
    compileall.compile_dir(Path(memrouter.__file__).parent, quiet=1)
    script = Path(sys.executable).with_name("memrouter")
    command = [str(script), "--root", str(CORPUS), "--index-dir", str(index_dir), "search", "session protocol",
               "--mode", "lexical", "--format", "json"]  # fmt: skip
    env = _env()
    _silent(command, env)  # the page cache warm, as for a user's second search of the day
    cold, bare = [], []
    for _ in range(runs):
        cold.append(_silent(command, env))
        bare.append(_silent([sys.executable, "-c", "pass"], env))
    wall, bare_wall = statistics.median(w for w, _ in cold), statistics.median(w for w, _ in bare)
    cpu, bare_cpu = statistics.median(c for _, c in cold), statistics.median(c for _, c in bare)
    return {
        "row": "cold CLI search (whole process)", "figure": f"{wall:.0f} ms (cpu {cpu:.0f})",
        "baseline": f"python -c pass {bare_wall:.0f} ms (cpu {bare_cpu:.0f})", "ratio": wall / bare_wall,
        "target": 4.0, "bare_ms": bare_wall,
    }  # fmt: skip


def upstream_rule(root: Path, query: str, limit: int = 10) -> list[str]:
    """The upstream router's search: query words (> 2 chars) found in the file's path."""
    words = [w for w in query.lower().split() if len(w) > 2]
    scored = []
    base = len(str(root)) + 1
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for file in files:
            if not file.endswith(".md") or not words:
                continue
            relative = os.path.join(folder, file)[base:].lower()
            score = sum(1 for w in words if w in relative) / len(words)
            if score > 0:
                scored.append((score, relative))
    scored.sort(reverse=True)
    return [name for _, name in scored[:limit]]


def _timed(call: Callable[[str], object], questions: list[str], rounds: int) -> list[float]:
    for question in questions:
        call(question)
    samples = []
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            call(question)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def warm_lexical(cache: Path) -> dict[str, Any]:
    questions = golden_questions()
    with Router.open(root=CORPUS, index_dir=built_index(cache, embed=False), watch=False) as router:
        ours = _timed(lambda q: router.search(q, mode="lexical"), questions, 5)
    theirs = _timed(lambda q: upstream_rule(CORPUS, q), questions, 2)
    p50, b50 = percentile(ours, 0.5), percentile(theirs, 0.5)
    return {
        "row": f"warm lexical search p50 ({len(questions)} questions)", "figure": f"{p50:.3f} ms",
        "baseline": f"upstream path rule {b50:.3f} ms", "ratio": p50 / b50, "target": 0.4,
    }  # fmt: skip


async def _first_list(params: Any) -> float:
    from mcp import Client

    started = time.perf_counter()
    async with Client(params) as client:
        result = await client.call_tool("list_memories", {})
        elapsed = (time.perf_counter() - started) * 1000
        assert not result.is_error, result.content
    return elapsed


def mcp_start(cache: Path, rounds: int = 5) -> dict[str, Any]:
    import anyio
    from mcp import StdioServerParameters

    if not SERENA.is_file():
        return {"row": "MCP start to list_memories", "missing": f"Serena not installed ({SERENA}): make interop-setup"}
    index_dir = built_index(cache, embed=False)
    work = Path(tempfile.mkdtemp(prefix="budget-mcp-"))
    try:
        project = work / "serena-project"
        shutil.copytree(CORPUS, project / ".serena" / "memories")
        (project / "README.md").write_text("# A project without source files\n")
        home = work / "home"
        home.mkdir()
        env = _env()
        ours = StdioServerParameters(
            command=sys.executable, env=env,
            args=["-m", "memrouter", "--root", str(CORPUS), "--index-dir", str(index_dir), "serve", "--tools", "serena"],
        )  # fmt: skip
        serena = [str(SERENA), "start-mcp-server", "--transport", "stdio", "--project", str(project),
                  "--agent-interface", "tools", "--context", "agent", "--enable-web-dashboard", "false",
                  "--open-web-dashboard", "false", "--enable-gui-log-window", "false"]  # fmt: skip
        theirs = StdioServerParameters(  # its log lines on stderr are not this table's
            command="sh", cwd=str(project), args=["-c", 'exec "$@" 2>/dev/null', "serena", *serena],
            env={**env, "SERENA_HOME": str(home), "HOME": str(home), "SERENA_USAGE_REPORTING": "false"},
        )  # fmt: skip
        sdk = [sys.executable, "-c", "import mcp.server.mcpserver, mcp.server.stdio"]
        anyio.run(_first_list, ours)  # warm the page cache and the bytecode
        ours_ms, theirs_ms, sdk_ms = [], [], []
        for _ in range(rounds):
            ours_ms.append(anyio.run(_first_list, ours))
            theirs_ms.append(anyio.run(_first_list, theirs))
            sdk_ms.append(_silent(sdk, env)[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total, serena, imported = statistics.median(ours_ms), statistics.median(theirs_ms), statistics.median(sdk_ms)
    own = total - imported
    return {
        "row": "MCP start to list_memories, own part", "figure": f"{own:.0f} ms (whole {total:.0f} ms)",
        "baseline": f"Serena {serena:.0f} ms; SDK import {imported:.0f} ms ({total / serena:.2f}x Serena)",
        "time": own, "target": 150.0,
    }  # fmt: skip


def scale(cache: Path) -> list[dict[str, Any]]:
    import bench_scale

    if not hasattr(bench_scale, "scale_row"):
        return [{"row": "lexical at 100,000 memories", "missing": "bench_scale.scale_row is not there yet"}]
    found = bench_scale.scale_row(cache / "scale-100k")
    fts = f"FTS5 p95 {found['fts5_p95']:.1f} / p99 {found['fts5_p99']:.1f} ms"
    return [
        {"row": "lexical at 100,000 memories, p95", "figure": f"{found['p95']:.1f} ms", "baseline": fts,
         "time": found["p95"], "target": 25.0},
        {"row": "lexical at 100,000 memories, p99", "figure": f"{found['p99']:.1f} ms", "baseline": fts,
         "time": found["p99"], "target": 60.0},
    ]  # fmt: skip


def hybrid(cache: Path, speed: float) -> dict[str, Any]:
    questions = golden_questions()
    with Router.open(root=CORPUS, index_dir=built_index(cache, embed=True), watch=False) as router:
        ours = _timed(lambda q: router.search(q, mode="hybrid"), questions, 3)
        lexical = _timed(lambda q: router.search(q, mode="lexical"), questions, 3)
    p50, p95 = percentiles(ours)
    return {
        "row": "warm hybrid search p95 (ai-agents-1026)", "figure": f"{p95:.1f} ms (p50 {p50:.1f})",
        "baseline": f"lexical p95 {percentiles(lexical)[1]:.2f} ms", "time": p95, "target": 12.6 * speed,
    }  # fmt: skip


def build(cache: Path, speed: float) -> dict[str, Any]:
    texts = [(p.relative_to(CORPUS).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(CORPUS.rglob("*.md"))]
    ours, theirs = [], []
    for _ in range(3):
        work = Path(tempfile.mkdtemp(prefix="budget-build-"))
        try:
            with Router.open(root=CORPUS, index_dir=work / "idx", watch=False) as router:
                started = time.perf_counter()
                router.refresh()
                ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            conn = sqlite3.connect(work / "fts.sqlite")
            conn.execute("CREATE VIRTUAL TABLE f USING fts5(name, body)")
            conn.executemany("INSERT INTO f VALUES (?, ?)", texts)
            conn.commit()
            conn.close()
            theirs.append(time.perf_counter() - started)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    mine, fts = statistics.median(ours), statistics.median(theirs)
    return {
        "row": "lexical full build (1,026 memories)", "figure": f"{mine:.2f} s ({mine / fts:.1f}x FTS5)",
        "baseline": f"FTS5 build {fts:.2f} s", "time": mine, "target": 3.0 * speed,
    }  # fmt: skip


def suite() -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):  # as make test runs it (TEST_TMPDIR)
        env["TMPDIR"] = "/dev/shm"
    workers = str(len(os.sched_getaffinity(0)) + 1)  # as make test runs it (TEST_WORKERS)
    wall, _ = _silent(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, "--ignore=tests/postgres"],
        env,
        ROOT,
    )
    return {"row": "test suite (make test's pytest)", "figure": f"{wall / 1000:.0f} s", "baseline": "-",
            "time": wall / 1000, "target": 150.0}  # fmt: skip


# -- the table ---------------------------------------------------------------
def verdict(row: dict[str, Any]) -> tuple[str, str, bool]:
    """(the measure, the target, within it) of one row."""
    if "missing" in row:
        return "-", "-", False
    if "ratio" in row:
        return f"{row['ratio']:.2f}x", f"<= {row['target']:g}x", row["ratio"] <= row["target"]
    return f"{row['time']:.1f}", f"<= {row['target']:.1f}", row["time"] <= row["target"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cache", type=Path, default=ROOT / ".memrouter" / "bench-cache")
    parser.add_argument("--suite", action="store_true", help="also time the test suite (minutes)")
    parser.add_argument("--only", default="", help="rows to run: cold,warm,mcp,scale,hybrid,build,suite")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else {"cold", "warm", "mcp", "scale", "hybrid", "build"}
    if args.suite:
        wanted.add("suite")
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    speed = 1.0
    if "cold" in wanted:
        rows.append(cold_cli(args.cache))
        speed = max(1.0, rows[-1]["bare_ms"] / REFERENCE_BARE_MS)
    if "warm" in wanted:
        rows.append(warm_lexical(args.cache))
    if "mcp" in wanted:
        rows.append(mcp_start(args.cache))
    if "scale" in wanted:
        rows += scale(args.cache)
    if "hybrid" in wanted:
        rows.append(hybrid(args.cache, speed))
    if "build" in wanted:
        rows.append(build(args.cache, speed))
    if "suite" in wanted:
        rows.append(suite())
    print(f"{'row':<44} {'figure':<26} {'measure':>9} {'target':>10}  verdict   baseline (same run)")
    failed = 0
    for row in rows:
        measure, target, ok = verdict(row)
        failed += not ok
        figure = row.get("figure", row.get("missing", ""))
        print(
            f"{row['row']:<44} {figure:<26} {measure:>9} {target:>10}  {'ok' if ok else 'OVER':<8}  {row.get('baseline', '')}"
        )
    print(f"machine speed against the reference: {speed:.2f}x slower; took {time.perf_counter() - started:.0f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
