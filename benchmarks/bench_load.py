"""Many agents, many repositories, one server: mixed MCP load over PostgreSQL, with SQLite as the baseline.

Builds ``--projects`` copies of the 1026-memory corpus in a temporary folder,
each made distinct (every memory ends with its project's marker word), starts
a real PostgreSQL 18 with pgvector and ``memrouter serve --http --projects
FILE`` over them (a real subprocess), then runs ``--clients`` real MCP SDK
streamable-HTTP clients (spread over ``--client-processes`` processes) for
``--seconds``: each operation goes to a random project and is a search (80%),
a save (15%) or a team operation (5%: set, get, add or claim a task). Then:

- p50/p95 latency per operation, throughput, errors;
- lost writes: every acknowledged save is checked afterwards, its file present
  with the content sent;
- convergence: each project's rows in PostgreSQL match its local index
  (which follows the files), name and hash, after one search per project.

The same load then runs against the same server command over one project's
local SQLite index (no database): the baseline, in the same run.

``--stop-postgres-at S`` stops PostgreSQL S seconds into the load and starts it
again ``--down`` seconds later: searches fall back to the local index (the
server's warning and ``memory_status`` are printed), saves still land in the
files, and the rows converge once PostgreSQL is back (checked and printed).

Lexical searches by default (``--mode``): hybrid would first embed every copy.
Figures on a shared machine are preliminary.

Usage: python benchmarks/bench_load.py [--seconds 300] [--projects 10] [--clients 16]
           [--client-processes 4] [--stop-postgres-at S [--down 20]] [--corpus DIR] [--skip-sqlite]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts

TOKEN = "bench-load-token"
SEARCH, SAVE, TEAM = "search", "save", "team"
WARNING = "PostgreSQL index unavailable"
CALL_TIMEOUT = 60.0  # seconds: a call not answered by then counts as an error (a hung server ends the run)


@dataclass
class Outcome:
    """What one client process saw: (op, wall time, seconds, error or None) and the saves acknowledged."""

    calls: list[tuple[str, float, float, str | None]] = field(default_factory=list)
    saves: list[tuple[str, str, str, float]] = field(default_factory=list)  # project, name, content, when
    late: int = 0  # clients still connecting when the load began


def make_projects(corpus: Path, base: Path, count: int, mode: str) -> dict[str, Path]:
    """``count`` copies of ``corpus`` under ``base``, every memory ending with its project's marker word."""
    projects = {}
    for number in range(count):
        key = f"p{number:02d}"
        folder = base / key
        root = folder / ".serena" / "memories"
        shutil.copytree(corpus, root)
        for file in root.rglob("*.md"):
            with file.open("a", encoding="utf-8") as out:
                out.write(f"\n\nProject marker: marker{key}\n")
        (folder / "memrouter.toml").write_text(
            f'[search]\nmode = "{mode}"\n[embed]\nbackground = false\n', encoding="utf-8"
        )
        projects[key] = folder
    return projects


def projects_file(base: Path, projects: dict[str, Path], database: str | None) -> Path:
    lines = [f'database = "{database}"'] if database else []
    for key, folder in projects.items():
        lines += [f"[projects.{key}]", f'path = "{folder}"']
    lines += ["[tokens.bench]", 'token_env = "BENCH_LOAD_TOKEN"', f"projects = {sorted(projects)!r}".replace("'", '"')]
    path = base / ("projects-pg.toml" if database else "projects-sqlite.toml")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build_indexes(file: Path, publish: bool) -> float:
    """Build every project's local index (and its rows in the database); seconds taken."""
    from memrouter.config.projects import load_projects
    from memrouter.router import Router

    served = load_projects(file, env={"BENCH_LOAD_TOKEN": TOKEN})
    started = time.perf_counter()
    for key in served.projects:
        with Router(served.config(key, env={}), watch=False) as router:
            router.refresh()
            if publish:
                router.publish()
    return time.perf_counter() - started


def start_server(file: Path, log: Path) -> tuple[subprocess.Popen[bytes], int, Any]:
    from memrouter.testing.servers import free_port

    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    env["BENCH_LOAD_TOKEN"] = TOKEN
    out = log.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "memrouter", "serve", "--http", "--port", str(port), "--projects", str(file), "--tools", "all"],
        env=env, stdout=subprocess.DEVNULL, stderr=out,
    )  # fmt: skip
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port, out
        except OSError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError("server did not listen in time")


def stop_server(process: subprocess.Popen[bytes], out: Any) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    out.close()


class Sessions:
    """One client's MCP sessions, one per project, opened on first use."""

    def __init__(self, port: int, stack: AsyncExitStack) -> None:
        self.port = port
        self.stack = stack
        self.open: dict[str, Any] = {}

    async def get(self, key: str) -> Any:
        if key not in self.open:
            import httpx2
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            http = await self.stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
            )
            url = f"http://127.0.0.1:{self.port}/mcp/{key}"
            self.open[key] = await self.stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
        return self.open[key]


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


async def one_client(number: int, port: int, keys: list[str], start: float, until: float, outcome: Outcome) -> None:
    """A client's whole life; a failure outside a call (connecting, closing) is counted as a ``session`` error."""
    import anyio

    phase = ["connecting"]
    try:
        with anyio.fail_after(until - time.time() + 2 * CALL_TIMEOUT):  # a server that stops answering ends it
            await client_calls(number, port, keys, start, until, outcome, phase)
    except Exception as exc:  # noqa: BLE001 - counted and shown, the other clients go on
        found = "; ".join(sorted({f"{type(leaf).__name__}: {leaf}" for leaf in leaves(exc)}))
        outcome.calls.append(("session", time.time(), 0.0, f"client {number} while {phase[0]}: {found}"))


async def client_calls(
    number: int, port: int, keys: list[str], start: float, until: float, outcome: Outcome, phase: list[str]
) -> None:
    rng = random.Random(number)
    agent = f"load-{number}"
    async with AsyncExitStack() as stack:
        sessions = Sessions(port, stack)
        for key in keys:  # connect and join each project's team before the clock starts
            await (await sessions.get(key)).call_tool("team_register", {"agent_id": agent})
        import anyio

        outcome.late += time.time() > start
        phase[0] = "calling"
        await anyio.sleep(max(0.0, start - time.time()))
        count = 0
        variables: set[str] = set()  # the projects where this client has set its team variable
        while time.time() < until:
            key = rng.choice(keys)
            client = await sessions.get(key)
            draw = rng.random()
            count += 1
            op = SEARCH if draw < 0.80 else SAVE if draw < 0.95 else TEAM
            if op == SEARCH:
                name, args = "search_memory", {"query": rng.choice(QUERIES), "limit": 10}
            elif op == SAVE:
                memory = f"load/c{number:02d}-{count:06d}"
                content = (
                    f"# Load note {number}-{count}\n\nWritten under load by {agent}: token {rng.getrandbits(64):x}.\n"
                )
                name, args = "save_memory", {"content": content, "memory_name": memory, "source": "ADR-001"}
            else:
                name, args = rng.choice([
                    ("team_set", {"key": f"load/{agent}", "value": count, "agent_id": agent}),
                    ("team_get", {"key": f"load/{agent}"}),
                    ("task_add", {"title": f"task {number}-{count}", "agent_id": agent}),
                    ("task_claim", {"lease_seconds": 60, "agent_id": agent}),
                ])  # fmt: skip
                if name == "team_get" and key not in variables:  # nothing to read yet: set it first
                    name, args = "team_set", {"key": f"load/{agent}", "value": count, "agent_id": agent}
                if name == "team_set":
                    variables.add(key)
            began = time.time()
            error: str | None = None
            try:
                with anyio.fail_after(CALL_TIMEOUT):
                    result = await client.call_tool(name, args)
                if result.is_error:
                    error = f"{name}: {result.content[0].text}"
            except Exception as exc:  # noqa: BLE001 - any failure of a call is an error to count
                error = f"{name}: {type(exc).__name__}: {exc}"
            outcome.calls.append((op, began, time.time() - began, error))
            if op == SAVE and error is None:
                outcome.saves.append((key, args["memory_name"], args["content"], began))
        phase[0] = "closing its sessions"


def client_process(numbers: list[int], port: int, keys: list[str], start: float, until: float) -> Outcome:
    """Run the clients ``numbers`` in this process from the wall time ``start`` until ``until``."""
    import anyio

    outcome = Outcome()

    async def run_all() -> None:
        async with anyio.create_task_group() as group:
            for number in numbers:
                group.start_soon(one_client, number, port, keys, start, until, outcome)

    anyio.run(run_all)
    return outcome


def run_load(port: int, keys: list[str], args: argparse.Namespace, during: Any = None) -> tuple[Outcome, float]:
    """All clients for ``args.seconds``; ``during(start)`` runs beside them in this process."""
    import anyio

    anyio.run(touch_all, port, keys)  # every project opened and its index fresh before the clients connect
    groups = [list(range(n, args.clients, args.client_processes)) for n in range(args.client_processes)]
    start = time.time() + 10 + args.clients * len(keys) * 0.1  # time for every session to connect first
    until = start + args.seconds
    merged = Outcome()
    with ProcessPoolExecutor(max_workers=args.client_processes) as pool:
        futures = [pool.submit(client_process, group, port, keys, start, until) for group in groups if group]
        side = threading.Thread(target=during, args=(start,)) if during else None
        if side:
            side.start()
        for future in futures:
            outcome = future.result()
            merged.calls += outcome.calls
            merged.saves += outcome.saves
            merged.late += outcome.late
        if side:
            side.join()
    if merged.late:
        print(f"  warning: {merged.late} client(s) were still connecting when the load began")
    return merged, args.seconds


def report(label: str, outcome: Outcome, seconds: float, projects: dict[str, Path]) -> dict[str, float]:
    print(f"\n{label}")
    print(f"  {'op':<8}{'count':>8}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}")
    p50s = {}
    for op in (SEARCH, SAVE, TEAM):
        samples = [took for kind, _, took, _ in outcome.calls if kind == op]
        errors = [error for kind, _, _, error in outcome.calls if kind == op and error]
        if samples:
            p50, p95 = percentiles(samples)
            p50s[op] = p50
            print(f"  {op:<8}{len(samples):>8}{len(errors):>8}{p50 * 1000:>10.1f}{p95 * 1000:>10.1f}")
    errors = [error for *_, error in outcome.calls if error]
    operations = sum(1 for call in outcome.calls if call[0] != "session")
    print(f"  throughput {operations / seconds:.1f} ops/s, {len(errors)} errors")
    for error in sorted(set(errors))[:5]:
        print(f"    error: {error[:200]}")
    lost = [name for key, name, content, _ in outcome.saves if not saved(projects[key], name, content)]
    print(
        f"  lost writes: {len(lost)} of {len(outcome.saves)} acknowledged saves" + (f" e.g. {lost[:3]}" if lost else "")
    )
    return p50s


def saved(folder: Path, name: str, content: str) -> bool:
    path = folder / ".serena" / "memories" / f"{name}.md"
    return path.is_file() and content.strip() in path.read_text(encoding="utf-8")


def local_rows(folder: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{folder / '.memrouter' / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return set(conn.execute("SELECT name, hash FROM memories"))
    finally:
        conn.close()


def database_rows(url: str, key: str) -> set[tuple[str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {
            (name, digest)
            for name, digest in conn.execute("SELECT name, hash FROM memories WHERE project = %s", (key,))
        }


async def touch_all(port: int, keys: list[str]) -> None:
    """One search per project (a search brings the project's rows in step)."""
    async with AsyncExitStack() as stack:
        sessions = Sessions(port, stack)
        for key in keys:
            await (await sessions.get(key)).call_tool("search_memory", {"query": "convergence check", "limit": 1})


def check_convergence(url: str, port: int, projects: dict[str, Path], outcome: Outcome, patience: float) -> None:
    """Wait (searching each project) until every project's rows match its local index; print how it went."""
    import anyio

    began = time.monotonic()
    pending = dict(projects)
    while pending and time.monotonic() - began < patience:
        anyio.run(touch_all, port, sorted(pending))
        pending = {key: folder for key, folder in pending.items() if local_rows(folder) != database_rows(url, key)}
        if pending:
            time.sleep(2)
    took = time.monotonic() - began
    acknowledged = {(key, name) for key, name, _, _ in outcome.saves}
    in_database = {(key, name) for key in projects for name, _ in database_rows(url, key)}
    missing = acknowledged - in_database
    state = "converged" if not pending else f"NOT converged ({', '.join(sorted(pending))})"
    print(f"  rows: {state} after {took:.1f} s; {len(acknowledged) - len(missing)} of {len(acknowledged)} "
          f"acknowledged saves have their row in PostgreSQL")  # fmt: skip
    hashes_ok = all(
        (name, hashlib.sha256((folder / ".serena" / "memories" / f"{name}.md").read_bytes()).hexdigest())
        in database_rows(url, key)
        for key, folder in projects.items()
        for name in sorted({n for k, n, _, _ in outcome.saves if k == key})[:20]
    )
    print(f"  saved files' hashes match their rows (20 per project): {hashes_ok}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--mode", default="lexical", choices=["lexical", "hybrid", "semantic"])
    parser.add_argument("--stop-postgres-at", type=float, default=None, metavar="SECONDS")
    parser.add_argument("--down", type=float, default=20.0, help="Seconds PostgreSQL stays stopped.")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--skip-sqlite", action="store_true", help="Leave out the SQLite baseline.")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"corpus {args.corpus} not found; skipping")
        return
    from memrouter.testing.postgres_server import running_postgres, start_again, stop

    work = Path(tempfile.mkdtemp(prefix="bench-load-"))
    try:
        started = time.perf_counter()
        projects = make_projects(args.corpus, work / "pg", args.projects, args.mode)
        print(f"{args.projects} projects x {sum(1 for _ in args.corpus.rglob('*.md'))} memories copied in "
              f"{time.perf_counter() - started:.1f} s; {args.clients} clients in {args.client_processes} processes, "
              f"{args.seconds:.0f} s per run, mode {args.mode}; PRELIMINARY on a shared machine")  # fmt: skip
        with running_postgres() as first:
            server = first
            file = projects_file(work, projects, server.url)
            print(f"PostgreSQL 18 + pgvector (pid {server.pid}); local indexes built and copied in "
                  f"{build_indexes(file, publish=True):.1f} s")  # fmt: skip
            process, port, out = start_server(file, work / "server-pg.log")
            keys = sorted(projects)
            outage: dict[str, Any] = {}

            def outage_at(start: float) -> None:
                nonlocal server
                time.sleep(max(0.0, start + args.stop_postgres_at - time.time()))
                outage["stopped"] = time.time()
                outage["at"] = outage["stopped"] - start
                stop(server)
                import anyio

                async def status() -> None:
                    async with AsyncExitStack() as stack:
                        client = await Sessions(port, stack).get(keys[0])
                        state = (await client.call_tool("memory_status", {})).structured_content
                    outage["database"] = state.get("database")
                    outage["warnings"] = [w for w in state.get("warnings", []) if "PostgreSQL" in w]

                time.sleep(min(3.0, args.down / 2))
                check = threading.Thread(target=anyio.run, args=(status,))
                check.start()
                time.sleep(max(0.0, outage["stopped"] + args.down - time.time()))
                server = start_again(server)
                outage["restarted"] = time.time()
                check.join()

            try:
                outcome, seconds = run_load(port, keys, args, outage_at if args.stop_postgres_at is not None else None)
                report(f"PostgreSQL, {len(keys)} projects", outcome, seconds, projects)
                if outage:
                    down = [c for c in outcome.calls if outage["stopped"] <= c[1] < outage["restarted"]]
                    searches = [c for c in down if c[0] == SEARCH]
                    saves = [s for s in outcome.saves if outage["stopped"] <= s[3] < outage["restarted"]]
                    print(f"  PostgreSQL stopped {outage['at']:.0f} s into the load for "
                          f"{outage['restarted'] - outage['stopped']:.1f} s: "
                          f"{len(searches)} searches ({sum(1 for c in searches if c[3])} errors), "
                          f"{len(saves)} saves acknowledged while it was down")  # fmt: skip
                    print(f"  memory_status while down: database {outage.get('database')}")
                    print(f"  warnings: {outage.get('warnings', [])[:1]}")
                check_convergence(server.url, port, projects, outcome, patience=90.0)
            finally:
                stop_server(process, out)
                if server is not first:
                    stop(server)
            log = (work / "server-pg.log").read_text(encoding="utf-8", errors="replace")
            print(f"  server log: {log.count(WARNING)} '{WARNING}' warnings")
        if not args.skip_sqlite:
            single = make_projects(args.corpus, work / "sqlite", 1, args.mode)
            file = projects_file(work, single, None)
            build_indexes(file, publish=False)
            process, port, out = start_server(file, work / "server-sqlite.log")
            try:
                outcome, seconds = run_load(port, sorted(single), args)
                report("SQLite baseline, 1 project (same server, no database)", outcome, seconds, single)
            finally:
                stop_server(process, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
