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
  (the transport's share).

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
from urllib.parse import urlencode

from _common import CORPUS, QUERIES, percentiles  # noqa: E402 - benchmarks run as scripts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from uibrowser import start_ui, stop_ui  # noqa: E402 - the browser tests' way to start the UI

NAVIGATION = (
    "() => { const n = performance.getEntriesByType('navigation')[0];"
    " return [n.loadEventEnd - n.startTime, n.responseEnd - n.requestStart]; }"
)
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
                browser.close()
        finally:
            stop_ui(server)
    count = sum(1 for _ in Path(args.corpus).rglob("*.md"))
    print(f"corpus: {args.corpus} ({count} memories), {args.rounds} rounds x {len(QUERIES)} queries")
    print(f"first page load (first request):      {first_loads[0]:7.1f} ms   (target 300)")
    p50, p95 = percentiles(first_loads[1:])
    print(f"first page load (fresh context)  p50: {p50:7.1f} ms   p95: {p95:7.1f} ms")
    p50, p95 = percentiles(rounds)
    print(f"lexical search round trip        p50: {p50:7.1f} ms   p95: {p95:7.1f} ms   (target 100)")
    a50, a95 = percentiles(answers)
    print(f"  of which request to last byte  p50: {a50:7.1f} ms   p95: {a95:7.1f} ms")
    b50, b95 = percentiles(library)
    print(f"baseline Router.search in-process p50: {b50:7.1f} ms   p95: {b95:7.1f} ms")
    s50, s95 = percentiles(stylesheet)
    print(f"baseline browser fetch of ui.css  p50: {s50:7.1f} ms   p95: {s95:7.1f} ms")
    print(f"round trip / (library + transport) at p50: {p50 / max(b50 + s50, 0.001):.2f}")


if __name__ == "__main__":
    main()
