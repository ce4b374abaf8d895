"""memrouter with the real Forgetful 0.6.0: augmented search overhead, full sync, validate.

Needs the peers built by ``make interop`` (``interop/.work``). Starts
``memrouter embed-serve`` (MiniLM) and the real Forgetful on free loopback
ports, copies ../shared/corpora/ai-agents-1026 into a temporary git project,
then measures in one process:

- ``Router.sync()`` of the corpus into Forgetful (first full sync), the
  no-op re-sync, and ``Router.validate()`` (local state, and with
  ``check_remote``);
- search latency over the same queries: canonical only (the baseline) against
  the default (canonical, then Forgetful's hits merged), p50 and p95: memory
  names as queries (the files fill the limit, so Forgetful is rarely asked)
  and rare words (found in at most three files, so Forgetful is always asked).

Run: ``.venv/bin/python benchmarks/bench_interop.py [--limit N] [--queries 40] [--embedder minilm|hash]``
(``--limit`` syncs only the first N memories; the default is the whole corpus).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "interop" / "tests"))

from _common import percentile, rare_words  # noqa: E402
from interop_peers import FORGETFUL_PYTHON, EmbedServer, start_forgetful  # noqa: E402

from memrouter import Router  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpora" / "ai-agents-1026"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args()
    if not FORGETFUL_PYTHON.exists():
        raise SystemExit(f"{FORGETFUL_PYTHON} is missing: run `make interop` (or interop/setup.sh) first")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        project = folder / "project"
        memories = project / ".serena" / "memories"
        files = sorted(args.corpus.rglob("*.md"))
        if args.limit:
            files = files[: args.limit]
        for file in files:
            target = memories / file.relative_to(args.corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
        for command in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@example.com", "-c", "user.name=b",
                                                         "commit", "-q", "-m", "corpus"]):  # fmt: skip
            subprocess.run(["git", *command], cwd=project, check=True)
        embeddings = EmbedServer(folder, embedder=args.embedder)
        embeddings.start()
        server = None
        try:
            server = start_forgetful(folder / "forgetful", embeddings.url)
            (project / "memrouter.toml").write_text(
                f'[backends.forgetful]\nurl = "{server.url}"\ntimeout = 60\nconnect_timeout = 30\n', encoding="utf-8"
            )
            with Router.open(root=memories, watch=False) as router:
                names = [m.name for m in router.list()]
                router.search("warm up the index", limit=5, origin="canonical")
                started = time.perf_counter()
                report = router.sync()[0]
                sync_s = time.perf_counter() - started
                started = time.perf_counter()
                again = router.sync()[0]
                resync_s = time.perf_counter() - started
                started = time.perf_counter()
                local = router.validate()[0]
                validate_ms = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                remote = router.validate(check_remote=True)[0]
                validate_remote_ms = (time.perf_counter() - started) * 1000
                print(f"memories: {len(names)}  embeddings: {args.embedder}  forgetful: {server.url}")
                print(f"full sync: {sync_s:.1f} s ({len(report.created)} created, ok={report.ok}, "
                      f"{report.remote_calls} remote calls, {len(names) / sync_s:.1f} memories/s)")  # fmt: skip
                print(f"re-sync (nothing changed): {resync_s * 1000:.0f} ms ({again.skipped} skipped)")
                print(f"validate: {validate_ms:.0f} ms local ({local.in_sync} in sync); "
                      f"{validate_remote_ms:.0f} ms with check_remote ({remote.in_sync} in sync)")  # fmt: skip

                queries = [
                    name.replace("/", " ").replace("-", " ") for name in names[:: max(1, len(names) // args.queries)]
                ]
                queries = queries[: args.queries]
                rare = rare_words(files, args.queries)
                # Forgetful is asked only when the files give fewer hits than the limit. Name queries
                # at limit 10 fill it from the files; at 200 most do too; a word found in at most
                # three files never fills 10, so every rare-word search asks Forgetful.
                for label, limit, batch in (("names", 10, queries), ("names", 200, queries), ("rare words", 10, rare)):
                    for query in batch[:3]:  # warm both paths
                        router.search(query, limit=limit)
                    canonical: list[float] = []
                    augmented: list[float] = []
                    external = asked = 0
                    for query in batch:  # interleaved, so drift hits both alike
                        started = time.perf_counter()
                        files_only = router.search(query, limit=limit, origin="canonical")
                        canonical.append((time.perf_counter() - started) * 1000)
                        started = time.perf_counter()
                        hits = router.search(query, limit=limit)
                        augmented.append((time.perf_counter() - started) * 1000)
                        external += sum(1 for h in hits if h.source != "canonical")
                        asked += len(files_only) < limit
                    where = f"{label}, limit {limit}"
                    for kind, values in (("canonical only", canonical), ("augmented", augmented)):
                        print(f"{where}: search {kind}: p50 {statistics.median(values):.1f} ms, "
                              f"p95 {percentile(values, 0.95):.1f} ms over {len(values)} queries")  # fmt: skip
                    if label == "rare words":  # what the service itself takes, called directly
                        backend = router.backend("forgetful")
                        direct = []
                        for query in batch:
                            started = time.perf_counter()
                            backend.search(query, limit)
                            direct.append((time.perf_counter() - started) * 1000)
                        print(f"{where}: Forgetful query_memory alone: p50 {statistics.median(direct):.1f} ms, "
                              f"p95 {percentile(direct, 0.95):.1f} ms")  # fmt: skip
                    print(f"{where}: augmented - canonical: "
                          f"p50 {statistics.median(augmented) - statistics.median(canonical):+.1f} ms, "
                          f"p95 {percentile(augmented, 0.95) - percentile(canonical, 0.95):+.1f} ms; "
                          f"Forgetful asked for {asked} of {len(batch)} queries; {external} external hits shown")  # fmt: skip
        finally:
            if server is not None:
                server.stop()
            embeddings.stop()


if __name__ == "__main__":
    main()
