"""Latency of the Forgetful backend against the fake server, and of cached health checks.

Measures, in one process:

- the in-process baseline: the fake's own ``query_memory`` with no MCP at all;
- ``ForgetfulBackend.search`` per call over streamable HTTP (``auto``, which
  the fake answers with the 2026 protocol, and ``legacy``, the initialize
  handshake the real Forgetful 0.6.0 speaks) and over stdio, with the session
  kept open on the private loop thread;
- a fresh ``mcp.Client`` per call under ``anyio.run`` (what the background
  loop saves), and the raw async SDK on one session (what the sync bridge
  costs);
- ``available()`` when the failure is cached, the same check uncached (a
  refused TCP connect), and a cached success.

Run: ``.venv/bin/python benchmarks/bench_backend.py [--calls 200] [--memories 200]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.forgetful_server import FakeForgetfulStore
from memrouter.testing.servers import free_port, serve_http, stdio_command

WORDS = (
    "cache index memory router sync hook embedding search lexical vector graph channel "
    "sprint team handoff decision pattern convention incident deploy docker python asyncio"
).split()


def _timed(call: Callable[[], object], calls: int, warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def _row(label: str, samples: list[float], baseline: float | None) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    ratio = f"{p50 / baseline:8.1f}x" if baseline else "        -"
    return f"{label:<44} {p50 * 1e3:10.3f} {p95 * 1e3:10.3f} {ratio}"


def _draft(i: int) -> MemoryDraft:
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(40)]
    return MemoryDraft(title=f"memory {i} {words[0]}", content=" ".join(words), importance=1 + i % 10)


def _seed(backend: ForgetfulBackend, count: int) -> None:
    for i in range(count):
        backend.upsert(_draft(i))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--memories", type=int, default=200)
    options = parser.parse_args()
    calls, memories = options.calls, options.memories
    query = "docker deploy python asyncio"

    print(f"search latency, {calls} calls, {memories} memories, k=10 (ms)")
    print(f"{'path':<44} {'p50':>10} {'p95':>10} {'vs base':>9}")

    store = FakeForgetfulStore()
    for i in range(memories):
        d = _draft(i)
        store.execute(
            "create_memory",
            {
                "title": d.title,
                "content": d.content,
                "context": "",
                "keywords": [],
                "tags": [],
                "importance": d.importance,
            },
        )
    args = {"query": query, "query_context": "bench", "k": 10, "include_links": False}
    base_samples = _timed(lambda: store.execute("query_memory", args), calls)
    baseline = statistics.median(base_samples)
    print(_row("in-process fake query_memory (baseline)", base_samples, None))

    with serve_http() as server:
        for protocol in ("auto", "legacy"):
            with ForgetfulBackend(ForgetfulConfig(url=server.url, protocol=protocol)) as backend:
                if protocol == "auto":
                    _seed(backend, memories)
                samples = _timed(lambda: backend.search(query, 10), calls)
                print(_row(f"http {protocol}: backend.search (session kept)", samples, baseline))

        import anyio
        from mcp import Client

        async def one_shot() -> None:
            async with Client(server.url, mode="legacy") as client:
                await client.call_tool("execute_forgetful_tool", {"tool_name": "query_memory", "arguments": args})

        fresh = _timed(lambda: anyio.run(one_shot), max(20, calls // 5), warmup=2)
        print(_row("http legacy: new Client per call (anyio.run)", fresh, baseline))

        async def raw_session() -> list[float]:
            # The SDK alone, one session, no thread hop: what the sync bridge adds is the difference.
            async with Client(server.url, mode="legacy") as client:
                samples = []
                for index in range(calls + 5):
                    start = time.perf_counter()
                    await client.call_tool("execute_forgetful_tool", {"tool_name": "query_memory", "arguments": args})
                    if index >= 5:
                        samples.append(time.perf_counter() - start)
                return samples

        print(_row("http legacy: raw async SDK session", anyio.run(raw_session), baseline))

    config = ForgetfulConfig(command=tuple(stdio_command()), timeout=30.0)
    with ForgetfulBackend(config) as backend:
        _seed(backend, memories)
        samples = _timed(lambda: backend.search(query, 10), calls)
        print(_row("stdio: backend.search (process kept)", samples, baseline))

    print()
    print("health check cost (ms)")
    print(f"{'path':<44} {'p50':>10} {'p95':>10} {'vs base':>9}")
    down = ForgetfulBackend(ForgetfulConfig(url=f"http://127.0.0.1:{free_port()}/mcp"))
    down.available(force=True)
    cached_down = _timed(down.available, calls * 50)
    print(_row("available(): failure cached", cached_down, None))
    uncached_down = _timed(lambda: down.available(force=True), calls)
    print(_row("available(force=True): refused connect", uncached_down, None))
    with serve_http() as server:
        up = ForgetfulBackend(ForgetfulConfig(url=server.url))
        up.available(force=True)
        print(_row("available(): success cached", _timed(up.available, calls * 50), None))
        print(_row("available(force=True): TCP connect", _timed(lambda: up.available(force=True), calls), None))
    p50_cached = statistics.median(cached_down) * 1e3
    verdict = "meets" if p50_cached < 1.0 else "MISSES"
    print(f"\ncached-down health check p50 = {p50_cached * 1e3:.1f} us ({verdict} the < 1 ms target)")


if __name__ == "__main__":
    main()
