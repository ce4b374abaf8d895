"""Branches and worktrees: shared vectors when indexing, and the cost and the share of ``search --branches local``.

    .venv/bin/python benchmarks/bench_branches.py [--worktrees 3] [--memories 1026] [--changed 20] [--embedder hash]
    .venv/bin/python benchmarks/bench_branches.py --search [--branches 10] [--worktrees 3] [--memories 1000]
    .venv/bin/python benchmarks/bench_branches.py --share

Indexing (the default):
A repository holds the ai-agents-1026 corpus (the first ``--memories`` files)
on ``main``; each of ``--worktrees`` worktrees is on its own branch, where
``--changed`` memories are rewritten. Every checkout is indexed with vectors
twice, in fresh copies of the same repository: once with ``[index]
shared_vectors`` off (each worktree embeds all of its memories) and once on
(``<git common dir>/memrouter/vectors.sqlite``). Prints, for both, the texts
the model embedded, the user CPU time of indexing (this process and the
runtime's threads), and the disk the indexes and the shared file take, then
the ratios. CPU time rather than wall time: the machine may be shared.

``--search`` (``bench_branch_search.py``): the added time of ``--branches local`` on a warm search and the first
search after a commit on another branch. ``--share``: how the share other branches' memories lose ranks them.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPUS  # noqa: E402

from memrouter import Router  # noqa: E402
from memrouter.config.settings import Config  # noqa: E402
from memrouter.core.records import replace  # noqa: E402
from memrouter.embed import get_embedder  # noqa: E402


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=B", "-c", "user.email=b@example.com", *args], cwd=folder, check=True,
                   capture_output=True)  # fmt: skip


def copy_corpus(main: Path, files: list[Path]) -> None:
    """``files`` of the corpus in ``main``'s memories folder, committed on ``main`` of a new repository."""
    for path in files:
        target = main / ".serena" / "memories" / path.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (main / ".gitignore").write_text(".memrouter/\nmemrouter.toml\n")
    git(main, "init", "-q", "-b", "main")
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "memories")


def repository(base: Path, memories: int, worktrees: int, changed: int) -> list[Path]:
    """The main checkout and its worktrees, each branch with ``changed`` memories of its own."""
    main = base / "main"
    files = sorted(CORPUS.rglob("*.md"))[:memories]
    copy_corpus(main, files)
    checkouts = [main]
    for n in range(worktrees):
        tree = base / f"wt{n}"
        git(main, "worktree", "add", "-q", str(tree), "-b", f"feat-{n}")
        for path in files[n * changed : (n + 1) * changed]:
            target = tree / ".serena" / "memories" / path.relative_to(CORPUS)
            target.write_text(target.read_text(encoding="utf-8") + f"\n\nChanged on feat-{n}.\n", encoding="utf-8")
        git(tree, "commit", "-q", "-am", f"feat-{n}")
        checkouts.append(tree)
    return checkouts


def disk(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder.exists() else 0


def index_all(checkouts: list[Path], embedder_name: str, shared: bool) -> tuple[int, float, int]:
    """(texts embedded, user CPU seconds, bytes on disk) of indexing every checkout with vectors."""
    embedder = get_embedder(embedder_name)
    texts = 0
    original = embedder.embed_batch

    def counted(batch):  # type: ignore[no-untyped-def]
        nonlocal texts
        texts += len(batch)
        return original(batch)

    embedder.embed_batch = counted  # type: ignore[method-assign]
    cpu = 0.0
    for checkout in checkouts:
        (checkout / "memrouter.toml").write_text(f"[index]\nshared_vectors = {str(shared).lower()}\n")
        with Router(replace(Config.load(cwd=checkout), embedder=embedder_name)) as router:
            router.workspace.index.dense._factory = lambda: embedder
            before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
            router.refresh(embed=True)
            cpu += resource.getrusage(resource.RUSAGE_SELF).ru_utime - before
    size = sum(disk(checkout / ".memrouter") for checkout in checkouts) + disk(checkouts[0] / ".git" / "memrouter")
    return texts, cpu, size


def main() -> None:
    if "--search" in sys.argv or "--share" in sys.argv:
        from bench_branch_search import main as searching

        searching()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worktrees", type=int, default=3)
    parser.add_argument("--memories", type=int, default=1026)
    parser.add_argument("--changed", type=int, default=20, help="memories rewritten on each worktree's branch")
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    results = {}
    for shared in (False, True):
        with tempfile.TemporaryDirectory() as base:
            checkouts = repository(Path(base), args.memories, args.worktrees, args.changed)
            results[shared] = index_all(checkouts, args.embedder, shared)
    print(f"{args.worktrees} worktrees + main, {args.memories} memories, {args.changed} changed per branch, "
          f"embedder {args.embedder}")  # fmt: skip
    for shared, (texts, cpu, size) in results.items():
        label = "shared vectors " if shared else "one per checkout"
        print(f"{label}: {texts:6d} texts embedded, {cpu:7.1f} s user CPU, {size / 2**20:7.1f} MiB on disk")
    (alone, alone_cpu, alone_size), (shared_texts, shared_cpu, shared_size) = results[False], results[True]
    print(f"ratio shared/alone: texts {shared_texts / alone:.3f}, CPU {shared_cpu / alone_cpu:.3f}, "
          f"disk {shared_size / alone_size:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
