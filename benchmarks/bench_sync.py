"""Full sync of a real corpus to the fake Forgetful, the no-op re-sync, and ``validate``.

Measures, in one process, on a copy of ../shared/corpora/ai-agents-1026:

- the baseline: the same drafts (split the same way) written straight into the
  fake's in-process store, no MCP, no network;
- ``Router.sync()`` to the fake over streamable HTTP (a real subprocess):
  the first full sync (target <= 60 s), then a re-sync where every hash is
  unchanged;
- ``Router.validate()`` over every memory (target <= 1 s), against the
  baseline of reading every name and hash from the index.

Run: ``.venv/bin/python benchmarks/bench_sync.py [--corpus DIR]``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memrouter import Router
from memrouter.core.records import replace
from memrouter.external.backends.split import split_content
from memrouter.external.sync.engine import draft_for
from memrouter.testing.forgetful_server import FakeForgetfulStore
from memrouter.testing.servers import serve_http

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ai-agents-1026"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        root = project / ".serena" / "memories"
        shutil.copytree(args.corpus, root)
        with serve_http() as server:
            (project / "memrouter.toml").write_text(f'[backends.forgetful]\nurl = "{server.url}"\n')
            with Router.open(root=root, watch=False) as router:
                router.refresh()
                names = [item.name for item in router.list()]

                store = FakeForgetfulStore()
                started = time.perf_counter()
                parts_total = 0
                for name in names:
                    memory = router.get(name)
                    draft = draft_for(memory, project_dir=project)
                    for part in split_content(memory.text, 2000):
                        parts_total += 1
                        store.execute("create_memory", {
                            "title": draft.title[:200], "content": part, "context": draft.context,
                            "keywords": list(draft.keywords)[:10], "tags": list(replace(draft).tags)[:10],
                        })  # fmt: skip
                baseline = time.perf_counter() - started
                store.close()

                started = time.perf_counter()
                (report,) = router.sync()
                full = time.perf_counter() - started
                assert report.ok, (report.error, list(report.failed.items())[:3])

                started = time.perf_counter()
                (again,) = router.sync()
                noop = time.perf_counter() - started

                router.validate()  # warm
                runs = []
                for _ in range(5):
                    started = time.perf_counter()
                    (checked,) = router.validate()
                    runs.append(time.perf_counter() - started)
                validate_s = min(runs)
                started = time.perf_counter()
                for _ in range(5):
                    router.workspace.conn.execute("SELECT name, hash FROM memories").fetchall()
                read_s = (time.perf_counter() - started) / 5

            def cli_s(*command: str) -> float:
                best = float("inf")
                for _ in range(3):
                    started = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "memrouter", *command], cwd=project, check=True,
                                   capture_output=True)  # fmt: skip
                    best = min(best, time.perf_counter() - started)
                return best

            cli_list = cli_s("list", "--format", "json")
            cli_validate = cli_s("validate", "--format", "json")

    print(f"corpus: {len(names)} memories, {parts_total} remote memories after splitting at 2,000 characters")
    print(f"{'step':<52} {'seconds':>9} {'vs baseline':>12}")
    print(f"{'baseline: same drafts into the in-process store':<52} {baseline:9.2f} {'1.0x':>12}")
    print(f"{'full sync over MCP/HTTP (target <= 60 s)':<52} {full:9.2f} {full / baseline:11.1f}x")
    print(f"{'re-sync, nothing changed (' + str(again.skipped) + ' skipped)':<52} {noop:9.3f} {noop / baseline:11.2f}x")
    print(f"{'baseline: read every name and hash from the index':<52} {read_s:9.4f} {'1.0x':>12}")
    print(f"{'validate (target <= 1 s)':<52} {validate_s:9.4f} {validate_s / read_s:11.1f}x")
    print(f"{'baseline: `memrouter list` in a new process':<52} {cli_list:9.3f} {'1.0x':>12}")
    print(f"{'`memrouter validate` in a new process':<52} {cli_validate:9.3f} {cli_validate / cli_list:11.2f}x")
    print(f"created {len(report.created)}; validate: in_sync {checked.in_sync} of {checked.total}")


if __name__ == "__main__":
    main()
