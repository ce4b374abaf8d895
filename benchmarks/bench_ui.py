"""The web UI's speed in a real browser on the 1026-memory corpus (Playwright driving Chromium).

Prints, in one run:
- first page load: the search page in a fresh browser context, the first
  request the server answers and then fresh contexts again (the Navigation
  Timing entry: ``loadEventEnd - startTime``, ms); target 300 ms;
- a warm lexical search round trip: the search page for each query
  (``/?q=...&mode=lexical``), after one warm-up pass, p50/p95 of the whole
  navigation (to the load event) and of its request to last byte; target 100 ms;
- baselines from the same run: ``Router.search`` in this process on the same
  corpus (the library's share), and the browser fetching the UI's stylesheet
  (the transport's share);
- the team board: from a task claimed in this process to the claim shown on
  an open ``/team`` page, pushed by server-sent events, against the same
  page with ``EventSource`` removed (it polls every 2 s: the baseline), the
  claims spread over the poll's phase;
- the graph page of one memory, drawn (navigation to the load event).

Needs what ``make test-ui`` installs (Chromium, the ``ui-test`` extra).
Usage: python benchmarks/bench_ui.py [CORPUS_DIR] [--rounds N] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from uibrowser import start_ui, stop_ui  # noqa: E402 - the browser tests' way to start the UI

NAVIGATION = (
    "() => { const n = performance.getEntriesByType('navigation')[0];"
    " return [n.loadEventEnd - n.startTime, n.responseEnd - n.requestStart]; }"
)
GRAPH_CENTRE = "adr/adr-007-augmentation-research"  # 59 edges: one of the largest drawings
FETCH = (
    "async (url) => { const t = performance.now(); const r = await fetch(url, {cache: 'no-store'});"
    " await r.text(); return performance.now() - t; }"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", nargs="?", type=Path, default=CORPUS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default=os.environ.get("MEMROUTER_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from memrouter import Router

    with tempfile.TemporaryDirectory() as scratch:
        root, index_dir = Path(scratch) / "memories", Path(scratch) / "idx"
        shutil.copytree(args.corpus, root)
        with Router.open(root=root, index_dir=index_dir, watch=False) as router:
            router.refresh()
            for query in QUERIES:
                router.search(query, 10, "lexical")
            library: list[float] = []
            for _ in range(args.rounds):
                for query in QUERIES:
                    started = time.perf_counter()
                    router.search(query, 20, "lexical")
                    library.append((time.perf_counter() - started) * 1000)
        server, address = start_ui(root, index_dir)
        address = address.rstrip("/")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                first_loads: list[float] = []
                for _ in range(1 + args.rounds):
                    context = browser.new_context()
                    page = context.new_page()
                    page.goto(address + "/")
                    first_loads.append(page.evaluate(NAVIGATION)[0])
                    context.close()
                context = browser.new_context()
                page = context.new_page()
                page.goto(address + "/")
                rounds: list[float] = []
                answers: list[float] = []
                stylesheet: list[float] = []
                for round_number in range(1 + args.rounds):
                    for query in QUERIES:
                        page.goto(address + "/?" + urlencode({"q": query, "mode": "lexical"}))
                        if round_number:  # the first pass warms the server and the browser
                            whole, answer = page.evaluate(NAVIGATION)
                            rounds.append(whole)
                            answers.append(answer)
                            stylesheet.append(page.evaluate(FETCH, address + "/static/ui.css"))
                graph: list[float] = []
                for _ in range(1 + args.rounds):
                    page.goto(address + "/graph?" + urlencode({"name": GRAPH_CENTRE}))
                    graph.append(page.evaluate(NAVIGATION)[0])
                pushed = _board_latency(browser, address, root, index_dir, args.rounds, events=True)
                polled = _board_latency(browser, address, root, index_dir, args.rounds, events=False)
                browser.close()
        finally:
            stop_ui(server)
    count = sum(1 for _ in Path(args.corpus).rglob("*.md"))
    print(f"corpus: {args.corpus} ({count} memories), {args.rounds} rounds x {len(QUERIES)} queries")
    print(f"first page load (first request):      {first_loads[0]:7.1f} ms   (target 300)")
    rows = [
        ("first page load (fresh context)", first_loads[1:], ""),
        ("lexical search round trip", rounds, "   (target 100)"),
        ("  of which request to last byte", answers, ""),
        ("baseline Router.search in-process", library, ""),
        ("baseline browser fetch of ui.css", stylesheet, ""),
        (f"graph page of {GRAPH_CENTRE} (drawn)", graph[1:], ""),
        ("team board: claim to shown, events", pushed, ""),
        ("baseline the same, polling every 2 s", polled, ""),
    ]
    for label, values, note in rows:
        p50, p95 = percentiles(values)
        print(f"{label:<38} p50: {p50:7.1f} ms   p95: {p95:7.1f} ms{note}")
    trip, lib, css = (percentiles(values)[0] for values in (rounds, library, stylesheet))
    print(f"round trip / (library + transport) at p50: {trip / max(lib + css, 0.001):.2f}")


def _board_latency(
    browser: Any, address: str, root: Path, index_dir: Path, rounds: int, *, events: bool
) -> list[float]:
    """Milliseconds from a task claimed here to the claim on an open team board (``rounds`` claims)."""
    from memrouter import Router

    context = browser.new_context()
    if not events:
        context.add_init_script("delete window.EventSource;")
    page = context.new_page()
    page.goto(address + "/team")
    page.wait_for_timeout(500)  # the stream open (or the polling started)
    took: list[float] = []
    with Router.open(root=root, index_dir=index_dir, watch=False) as router:
        team = router.team()
        agent = f"bench-{'events' if events else 'polling'}"
        team.register(agent, capabilities=["python"])
        for number in range(rounds * 2):
            title = f"{agent} task {number}"
            team.task_add(title)
            page.wait_for_timeout(number * 370 % 2000)  # claims at spread phases of the 2 s poll
            started = time.perf_counter()
            assert team.task_claim(agent, lease_seconds=600) is not None
            page.wait_for_function("(title) => document.getElementById('board').textContent.includes(title)", arg=title)
            took.append((time.perf_counter() - started) * 1000)
    context.close()
    return took


if __name__ == "__main__":
    main()
