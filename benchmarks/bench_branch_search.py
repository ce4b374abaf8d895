"""``search --branches local``: its added cost on a warm search, the first search after a commit elsewhere, the share.

    .venv/bin/python benchmarks/bench_branches.py --search [--branches 10] [--worktrees 3] [--memories 1000]
        [--changed 20] [--rounds 5]
    .venv/bin/python benchmarks/bench_branches.py --share [--mode lexical|hybrid]

``--search``: a repository holds the first ``--memories`` files of the ai-agents-1026 corpus on ``main``;
each of ``--branches`` branches rewrites ``--changed`` of them, adds 5 and removes 5; the first ``--worktrees``
are checked out in worktrees, each with 3 more memories left uncommitted (the others' worktrees are removed
after their commit). From the main checkout, each query of the fixed list is searched (lexical) without and
with ``--branches local``, in pairs, in one process, ``--rounds`` times; printed: the p50 of each, and the
p50 of the paired difference, in wall time and in this process's CPU time (the machine may be shared), with
``[search] refresh_interval`` 1 (the default: the repository is looked at at most once a second) and 0 (before
every search). Then, five times: a commit in a worktree, the first search after it, and the next one.

``--share``: the golden queries of ai-agents-1026 (``--mode``, lexical by default). Half of them (even positions) have their first
expected memory only on a branch (removed from ``main``, present on ``feat-new``); for the other half the first
expected memory is on ``main`` and ``feat-changed`` holds a changed version of it (a paragraph added). For each
share: the mean reciprocal rank (top 10) of the branch-only answers, of the checkout's own answers, and the
queries where a branch's copy came above the checkout's own; and, for reference, the first MRR when ``main``
holds those answers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPUS, QUERIES  # noqa: E402
from bench_branches import copy_corpus, git  # noqa: E402

from memrouter import Router  # noqa: E402
from memrouter.config.settings import Config  # noqa: E402
from memrouter.core.records import replace  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden" / "ai-agents-1026.json"
MEMORIES = Path(".serena") / "memories"


def repository(base: Path, memories: int, branches: int, worktrees: int, changed: int) -> tuple[Path, list[Path]]:
    """The main checkout and the worktrees left checked out."""
    main = base / "main"
    files = sorted(CORPUS.rglob("*.md"))[:memories]
    copy_corpus(main, files)
    kept = []
    for n in range(branches):
        tree = base / f"wt{n}"
        git(main, "worktree", "add", "-q", str(tree), "-b", f"feat-{n}")
        root = tree / MEMORIES
        mine = files[(n * (changed + 10)) % len(files) :][: changed + 10]
        for path in mine[:changed]:
            target = root / path.relative_to(CORPUS)
            target.write_text(target.read_text(encoding="utf-8") + f"\n\nChanged on feat-{n}.\n", encoding="utf-8")
        for k, path in enumerate(mine[changed : changed + 5]):
            text = path.read_text(encoding="utf-8") + f"\n\nA variant written on feat-{n}.\n"
            (root / f"feat-{n}-new-{k}.md").write_text(text, encoding="utf-8")
        for path in mine[changed + 5 :]:
            (root / path.relative_to(CORPUS)).unlink()
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", f"feat-{n}")
        if n < worktrees:
            for k in range(3):
                (root / f"draft-{n}-{k}.md").write_text(f"# Draft {k} on feat-{n}\n\nUncommitted worktree note.\n")
            kept.append(tree)
        else:
            git(main, "worktree", "remove", str(tree))
    return main, kept


def open_router(main: Path, interval: float, mode: str = "lexical") -> Router:
    (main / "memrouter.toml").write_text(f'[search]\nmode = "{mode}"\nrefresh_interval = {interval}\n')
    router = Router(Config.load(cwd=main), watch=False)
    if mode != "lexical":
        router.refresh(embed=True)  # every vector first: the searches measured never wait for the model
    return router


def paired(router: Router, rounds: int) -> dict[str, list[float]]:
    """Wall and CPU milliseconds of each search without and with other branches, in pairs."""
    found: dict[str, list[float]] = {
        "none": [],
        "local": [],
        "none_cpu": [],
        "local_cpu": [],
        "diff": [],
        "diff_cpu": [],
    }
    for query in QUERIES:  # warm both paths first
        router.search(query, branches="none")
        router.search(query, branches="local")
    for _ in range(rounds):
        for query in QUERIES:
            times = {}
            for branches in ("none", "local"):
                wall, cpu = time.perf_counter(), time.process_time()
                router.search(query, branches=branches)
                times[branches] = ((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)
                found[branches].append(times[branches][0])
                found[f"{branches}_cpu"].append(times[branches][1])
            found["diff"].append(times["local"][0] - times["none"][0])
            found["diff_cpu"].append(times["local"][1] - times["none"][1])
    return found


def search_bench(args: argparse.Namespace) -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores, shared)")
    with tempfile.TemporaryDirectory() as base:
        main, kept = repository(Path(base), args.memories, args.branches, args.worktrees, args.changed)
        print(f"{args.branches} branches ({args.worktrees} in worktrees), {args.memories} memories on main, "
              f"{args.changed} changed + 5 new + 5 removed per branch, 3 uncommitted per worktree; lexical")  # fmt: skip
        for interval in (1.0, 0.0):
            with open_router(main, interval) as router:
                started = time.perf_counter()
                router.search("warm up the index", branches="local")
                if interval == 1.0:
                    print(f"first search of a new process and index (both indexes built, the repository surveyed): "
                          f"{(time.perf_counter() - started) * 1000:.0f} ms")  # fmt: skip
                found = paired(router, args.rounds)
            med = {key: statistics.median(values) for key, values in found.items()}
            print(f"refresh_interval {interval:g}: p50 without {med['none']:.2f} ms, with {med['local']:.2f} ms, "
                  f"added (paired) {med['diff']:.2f} ms wall; CPU without {med['none_cpu']:.2f} ms, with "
                  f"{med['local_cpu']:.2f} ms, added {med['diff_cpu']:.2f} ms")  # fmt: skip
        firsts, nexts = [], []
        with open_router(main, 0.0) as router:
            router.search("warm up", branches="local")
            for n in range(5):
                (kept[0] / MEMORIES / f"later-{n}.md").write_text(f"# Later {n}\n\nCommitted after the start.\n")
                git(kept[0], "add", "-A")
                git(kept[0], "commit", "-q", "-m", f"later {n}")
                for into in (firsts, nexts):
                    started = time.perf_counter()
                    hits = router.search(f"later {n} committed", branches="local")
                    into.append((time.perf_counter() - started) * 1000)
                assert any(hit.name == f"later-{n}" for hit in hits), [hit.name for hit in hits]
        print(f"after a commit on feat-0: first search p50 {statistics.median(firsts):.0f} ms "
              f"(max {max(firsts):.0f}), the next {statistics.median(nexts):.2f} ms")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def share_bench(args: argparse.Namespace) -> None:
    queries = json.loads(GOLDEN.read_text(encoding="utf-8"))["queries"]
    only_branch = {q["expected"][0] for q in queries[::2]}
    both = {q["expected"][0] for q in queries[1::2]} - only_branch
    with tempfile.TemporaryDirectory() as base:
        main = Path(base) / "main"
        copy_corpus(main, sorted(CORPUS.rglob("*.md")))
        for branch, names in (("feat-new", only_branch), ("feat-changed", both)):
            tree = Path(base) / branch
            git(main, "worktree", "add", "-q", str(tree), "-b", branch)
            for name in names:
                path = tree / MEMORIES / f"{name}.md"
                path.write_text(path.read_text(encoding="utf-8") + f"\n\nRevised on {branch}.\n", encoding="utf-8")
            git(tree, "commit", "-q", "-am", branch)
        with open_router(main, 1.0, args.mode) as router:  # the reference: the same answers when main holds them
            reference = statistics.mean(reciprocal(router, q, "none") for q in queries[::2])
        for name in only_branch:
            (main / MEMORIES / f"{name}.md").unlink()
        git(main, "commit", "-q", "-am", "moved to a branch")
        print(f"{len(queries)} golden queries: {len(only_branch)} answers only on a branch, {len(both)} on main "
              f"with a changed copy on a branch; {args.mode}, top 10")  # fmt: skip
        print(f"MRR of the branch-only answers when main holds them (no --branches): {reference:.3f}")
        print("share  MRR branch-only  MRR checkout's own  branch copy above own")
        with open_router(main, 1.0, args.mode) as router:
            for share in (0.0, 0.1, 0.2, 0.3, 0.5, 0.7):
                ws = router.workspace
                ws.config = replace(ws.config, branches=replace(ws.config.branches, share=share))
                branch_rr, own_rr, above = [], [], 0
                for position, query in enumerate(queries):
                    hits = router.search(query["query"], limit=10, branches="local")
                    wanted = query["expected"][0]
                    ranks = [(n, any(m.retriever == "branch" for m in hit.why)) for n, hit in enumerate(hits, 1)
                             if hit.name == wanted]  # fmt: skip
                    if position % 2 == 0:
                        branch_rr.append(1 / ranks[0][0] if ranks else 0.0)
                    elif wanted in both:
                        own = [n for n, theirs in ranks if not theirs]
                        own_rr.append(1 / own[0] if own else 0.0)
                        theirs_first = [n for n, theirs in ranks if theirs]
                        above += bool(theirs_first and (not own or theirs_first[0] < own[0]))
                print(f"{share:5.1f}  {statistics.mean(branch_rr):15.3f}  {statistics.mean(own_rr):18.3f}  "
                      f"{above:5d} of {len(own_rr)}")  # fmt: skip
    print(f"load average: {os.getloadavg()[0]:.2f}")


def reciprocal(router: Router, query: dict[str, object], branches: str) -> float:
    hits = router.search(str(query["query"]), limit=10, branches=branches)
    wanted = query["expected"][0]  # type: ignore[index]
    return next((1 / n for n, hit in enumerate(hits, 1) if hit.name == wanted), 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--search", action="store_true")
    parser.add_argument("--share", action="store_true")
    parser.add_argument("--branches", type=int, default=10)
    parser.add_argument("--worktrees", type=int, default=3)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--changed", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mode", default="lexical", help="--share: the search mode (hybrid embeds with MiniLM)")
    args = parser.parse_args()
    if args.share:
        share_bench(args)
    else:
        search_bench(args)


if __name__ == "__main__":
    main()
