"""MCP server speed on the 1026-memory corpus: protocol overhead and start time.

Prints, in one run:
- warm ``search_memory`` round trips over stdio (a real ``memrouter serve``
  subprocess and the SDK's client), p50/p95, for mode lexical and hybrid,
  next to the in-process ``Router.search`` on the same queries (the
  baseline), and their ratio: what the protocol and the process boundary cost;
- the same round trips over the SDK's in-memory transport (protocol without
  the pipe), and over stdio from a hand-written JSON-RPC client (the
  server's share, without the SDK client's own cost);
- server start to first answer (spawn, handshake, first search), with the
  index already built and with no index, next to the time the interpreter
  alone takes to import the MCP SDK (the floor memrouter cannot go under).

Whether ``hybrid`` really fuses dense retrieval is read from the answers
(``retrievers``); if it is lexical only, the report says so.

Usage: python benchmarks/bench_mcp.py [CORPUS_DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts


def line(label: str, samples: list[float], baseline: list[float] | None = None) -> str:
    p50, p95 = percentiles(samples)
    text = f"  {label:<34} p50 {p50 * 1000:7.2f} ms   p95 {p95 * 1000:7.2f} ms"
    if baseline:
        b50, _ = percentiles(baseline)
        text += f"   ({p50 / b50:5.1f}x baseline, +{(p50 - b50) * 1000:.2f} ms)"
    return text


def server_params(corpus: Path, index_dir: Path) -> Any:
    from mcp import StdioServerParameters

    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memrouter", "--root", str(corpus), "--index-dir", str(index_dir), "serve", "--tools", "serena"],
        env=env,
    )


async def round_trips(client: Any, mode: str, rounds: int) -> tuple[list[float], list[str]]:
    samples: list[float] = []
    retrievers: set[str] = set()
    for query in QUERIES[:3]:  # warm-up
        await client.call_tool("search_memory", {"query": query, "mode": mode})
    for _ in range(rounds):
        for query in QUERIES:
            started = time.perf_counter()
            result = await client.call_tool("search_memory", {"query": query, "mode": mode})
            samples.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(result.content[0].text)
            retrievers.update(result.structured_content["retrievers"])
    return samples, sorted(retrievers)


async def start_to_first_answer(corpus: Path, index_dir: Path) -> float:
    from mcp import Client

    started = time.perf_counter()
    async with Client(server_params(corpus, index_dir)) as client:
        result = await client.call_tool("search_memory", {"query": "merge conflict resolution", "mode": "lexical"})
        elapsed = time.perf_counter() - started
        assert not result.is_error, result.content
    return elapsed


def raw_stdio_round_trips(corpus: Path, index_dir: Path, mode: str, rounds: int) -> list[float]:
    """The server alone: JSON-RPC lines written to its stdin by hand, no client library."""
    import json

    params = server_params(corpus, index_dir)
    process = subprocess.Popen(
        [params.command, *params.args], env=params.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, bufsize=1,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    counter = 0

    def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal counter
        counter += 1
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": counter, "method": method, "params": params}) + "\n")  # type: ignore[union-attr]
        while True:
            answer = json.loads(process.stdout.readline())  # type: ignore[union-attr]
            if answer.get("id") == counter:
                return answer  # type: ignore[no-any-return]

    try:
        request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        for query in QUERIES[:3]:
            request("tools/call", {"name": "search_memory", "arguments": {"query": query, "mode": mode}})
        samples = []
        for _ in range(rounds):
            for query in QUERIES:
                started = time.perf_counter()
                answer = request("tools/call", {"name": "search_memory", "arguments": {"query": query, "mode": mode}})
                samples.append(time.perf_counter() - started)
                assert "result" in answer and not answer["result"].get("isError"), answer
        return samples
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def sdk_import_time() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.mcpserver"], check=True)
    return time.perf_counter() - started


async def main_async(corpus: Path, rounds: int, starts: int, index_path: Path | None = None) -> None:
    from mcp import Client

    from memrouter.mcp.server import create_server
    from memrouter.mcp.service import MemoryService
    from memrouter.router import Router

    work = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        # An index with vectors (built by `memrouter index`) makes hybrid really fuse dense search.
        index_dir = index_path or work / "index"
        print(
            f"corpus: {corpus} ({sum(1 for _ in corpus.rglob('*.md'))} files), {len(QUERIES)} queries x {rounds} rounds"
        )

        # Baseline: the in-process router, warm.
        baseline: dict[str, list[float]] = {}
        with Router.open(root=corpus, index_dir=index_dir, watch=True) as router:
            router.refresh()
            for mode in ("lexical", "hybrid"):
                for query in QUERIES[:3]:
                    router.search(query, mode=mode)
                samples = []
                for _ in range(rounds):
                    for query in QUERIES:
                        started = time.perf_counter()
                        router.search(query, mode=mode)
                        samples.append(time.perf_counter() - started)
                baseline[mode] = samples

            # The protocol without the pipe: the SDK's in-memory transport.
            memory: dict[str, list[float]] = {}
            async with Client(create_server(MemoryService(router))) as client:
                for mode in ("lexical", "hybrid"):
                    memory[mode], _ = await round_trips(client, mode, rounds)

        # The real thing: memrouter serve over stdio.
        stdio: dict[str, list[float]] = {}
        used: dict[str, list[str]] = {}
        async with Client(server_params(corpus, index_dir)) as client:
            for mode in ("lexical", "hybrid"):
                stdio[mode], used[mode] = await round_trips(client, mode, rounds)

        raw = {mode: raw_stdio_round_trips(corpus, index_dir, mode, rounds) for mode in ("lexical", "hybrid")}

        print("\nwarm search_memory round trip")
        for mode in ("lexical", "hybrid"):
            print(f" mode {mode} (retrievers answering: {', '.join(used[mode])})")
            print(line("in-process Router.search (baseline)", baseline[mode]))
            print(line("MCP in-memory transport", memory[mode], baseline[mode]))
            print(line("stdio, hand-written JSON-RPC client", raw[mode], baseline[mode]))
            print(line("stdio, the SDK's Client", stdio[mode], baseline[mode]))
        if used["hybrid"] == ["lexical"]:
            print(
                " note: hybrid fell back to lexical (no dense retriever in this build): the hybrid figures are lexical"
            )

        warm_starts = [await start_to_first_answer(corpus, index_dir) for _ in range(starts)]
        cold_starts = []
        for attempt in range(max(1, starts // 2)):
            fresh = work / f"fresh-index-{attempt}"
            cold_starts.append(await start_to_first_answer(corpus, fresh))
        imports = [sdk_import_time() for _ in range(starts)]
        print("\nserver start to first answer (spawn + handshake + first lexical search), median")
        print(f"  python -c 'import mcp.server.mcpserver' (floor)   {statistics.median(imports):6.2f} s")
        print(f"  memrouter serve, index already built              {statistics.median(warm_starts):6.2f} s")
        print(f"  memrouter serve, no index yet (builds it)         {statistics.median(cold_starts):6.2f} s")
        print(f"  load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("corpus", nargs="?", default=str(CORPUS))
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument(
        "--index-dir", type=Path, default=None, help="reuse an index (one with vectors measures hybrid)"
    )
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"skipped: corpus {corpus} is not available")
        return
    anyio.run(main_async, corpus, args.rounds, args.starts, args.index_dir)


if __name__ == "__main__":
    main()
