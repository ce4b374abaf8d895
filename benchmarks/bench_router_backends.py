"""What an external backend adds to a search: up, down (failure cached), against canonical-only.

In one process, on ../shared/corpora/ai-agents-1026 (lexical mode, so only
the routing is measured):

- baseline: ``Router.search(q, origin="canonical")``, the files only;
- backend up: the default search with the fake Forgetful (a real subprocess
  over streamable HTTP) holding the synced corpus plus memories only it
  knows; the queries are rare words, so the files return fewer hits than the
  limit and the service is really asked every time (target <= 5 ms over the
  baseline); also typical queries where the files fill the limit and the
  service is not asked;
- backend down: nothing listening on its port, the failure cached
  (target <= 1 ms over the baseline), and the first, uncached search.

Run: ``.venv/bin/python benchmarks/bench_router_backends.py [--calls 200]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from memrouter import Router
from memrouter.external.backends.base import MemoryDraft
from memrouter.testing.servers import free_port, serve_http

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ai-agents-1026"
LIMIT = 10


def _paired(base: Callable[[], object], other: Callable[[], object], calls: int) -> tuple[float, float]:
    """Medians of ``base`` and ``other``, called alternately so load on the machine hits both alike."""
    for _ in range(5):
        base(), other()
    a, b = [], []
    for _ in range(calls):
        start = time.perf_counter()
        base()
        a.append(time.perf_counter() - start)
        start = time.perf_counter()
        other()
        b.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b)


def _rare_words(root: Path, count: int) -> list[str]:
    """Words in exactly one or two memory files: the files alone cannot fill the limit."""
    seen: Counter[str] = Counter()
    for path in sorted(root.rglob("*.md")):
        seen.update({w for w in path.read_text(errors="replace").lower().split() if w.isalpha() and len(w) > 7})
    return sorted(w for w, n in seen.items() if n <= 2)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        root = project / ".serena" / "memories"
        shutil.copytree(CORPUS, root)
        rare = _rare_words(root, 50)
        typical = ["docker build cache", "session protocol handoff", "memory search", "pull request review"]
        rows: list[tuple[str, float, float]] = []
        with serve_http() as server:
            (project / "memrouter.toml").write_text(f'[backends.forgetful]\nurl = "{server.url}"\n')
            with Router.open(root=root, watch=False) as router:
                assert router.sync()[0].ok
                service = router.backend("forgetful")
                for word in rare:  # memories only the service knows
                    service.upsert(MemoryDraft(title=f"service note on {word}", content=f"Outside notes: {word}."))
                index = iter(range(10**9))

                def canonical_rare() -> object:
                    q = rare[next(index) % len(rare)]
                    return router.search(q, LIMIT, "lexical", origin="canonical")

                def routed_rare() -> object:
                    q = rare[next(index) % len(rare)]
                    return router.search(q, LIMIT, "lexical")

                def canonical_typical() -> object:
                    q = typical[next(index) % len(typical)]
                    return router.search(q, LIMIT, "lexical", origin="canonical")

                def routed_typical() -> object:
                    q = typical[next(index) % len(typical)]
                    return router.search(q, LIMIT, "lexical")

                hits = router.search(rare[0], LIMIT, "lexical")
                assert any(h.source == "forgetful" for h in hits), "the service was not asked"
                base_rare, up = _paired(canonical_rare, routed_rare, args.calls)
                rows.append(("canonical only, rare-word queries (baseline)", base_rare, base_rare))
                rows.append(("backend up, service asked", up, base_rare))
                base_typical, full = _paired(canonical_typical, routed_typical, args.calls)
                rows.append(("canonical only, typical queries (baseline)", base_typical, base_typical))
                rows.append(("backend up, files fill the limit", full, base_typical))

        (project / "memrouter.toml").write_text(f'[backends.forgetful]\nurl = "http://127.0.0.1:{free_port()}/mcp"\n')
        with Router.open(root=root, watch=False) as router:
            router.refresh()
            started = time.perf_counter()
            router.search(rare[0], LIMIT, "lexical")
            first = time.perf_counter() - started
            index = iter(range(10**9))

            def canonical_down() -> object:
                return router.search(rare[next(index) % len(rare)], LIMIT, "lexical", origin="canonical")

            def routed_down() -> object:
                return router.search(rare[next(index) % len(rare)], LIMIT, "lexical")

            base_down, down = _paired(canonical_down, routed_down, args.calls)
            rows.append(("canonical only, rare-word queries (baseline)", base_down, base_down))
            rows.append(("backend down, failure cached", down, base_down))
            rows.append(("down, first search (loads backend, refused)", first, base_down))
            assert router.status()["backends"][0]["available"] is False

    print(f"corpus: {CORPUS.name}, limit {LIMIT}, p50 of {args.calls} searches")
    print(f"{'search':<48} {'p50 ms':>9} {'over base ms':>13} {'ratio':>7}")
    for label, value, base in rows:
        print(f"{label:<48} {value * 1e3:9.3f} {(value - base) * 1e3:13.3f} {value / base:6.2f}x")


if __name__ == "__main__":
    main()
