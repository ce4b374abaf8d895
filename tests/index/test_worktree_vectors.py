"""Worktrees of one repository share their vectors: each chunk is embedded once, by real worktrees and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import SAMPLE, commit_all_as, git, write

from memrouter.repo.common import shared_folder
from memrouter.testing.counting_embedder import counted_router, embedded


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A main checkout with the sample memories committed, and a worktree of it on branch ``feat-x``."""
    main = tmp_path / "main"
    for name, text in SAMPLE.items():
        write(main / ".serena" / "memories", name, text)
    (main / ".gitignore").write_text(".memrouter/\n")
    commit_all_as(main, "Ada", "ada@example.com")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feat-x")
    return main, tmp_path / "wt"


def _vectors(project: Path) -> int:
    """How many vectors the shared file of ``project``'s repository holds."""
    folder = shared_folder(project)
    assert folder is not None
    with sqlite3.connect(folder / "vectors.sqlite") as conn:
        count: int = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    return count


def _chunks(project: Path) -> int:
    with sqlite3.connect(project / ".memrouter" / "index.sqlite") as conn:
        count: int = conn.execute(
            "SELECT count(*) FROM chunks c JOIN memories m ON m.id = c.memory_id AND m.hash = c.memory_hash"
        ).fetchone()[0]
    return count


def test_the_shared_folder_is_the_common_git_directory_of_every_worktree(tmp_path: Path) -> None:
    main, worktree = _repository(tmp_path)
    assert shared_folder(main) == shared_folder(worktree) == (main / ".git" / "memrouter").resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert shared_folder(plain) is None


def test_a_second_worktree_embeds_nothing_its_repository_embedded(tmp_path: Path) -> None:
    main, worktree = _repository(tmp_path)
    log = tmp_path / "embedded.log"
    with counted_router(main, log) as router:
        router.refresh(embed=True)
    first = embedded(log)
    assert first and set(first.values()) == {1}
    with counted_router(worktree, log) as router:
        router.refresh(embed=True)
        assert embedded(log) == first  # the worktree read every vector; the model embedded nothing
        hits = router.search("PostgreSQL transactions", mode="semantic")  # (the query is embedded)
    assert hits and hits[0].name == "adr/adr-001-postgres"
    log.unlink()
    assert _chunks(worktree) == _chunks(main) == sum(first.values()) == _vectors(main)

    write(worktree / ".serena" / "memories", "feat/new-cache", "# New cache\n\nAn LRU in front of the search API.\n")
    with counted_router(worktree, log) as router:
        router.refresh(embed=True)
    assert sum(embedded(log).values()) == 1  # the new memory's one chunk
    with counted_router(main, log) as router:  # the main checkout lacks the file: its index does not gain it
        router.refresh(embed=True)
    assert sum(embedded(log).values()) == 1 and _chunks(main) == sum(first.values())


def test_an_index_without_shared_vectors_embeds_its_own(tmp_path: Path) -> None:
    main, worktree = _repository(tmp_path)
    (worktree / "memrouter.toml").write_text("[index]\nshared_vectors = false\n")
    log = tmp_path / "embedded.log"
    for project in (main, worktree):
        with counted_router(project, log) as router:
            router.refresh(embed=True)
    assert set(embedded(log).values()) == {2}


WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memrouter.testing.counting_embedder import counted_router
    with counted_router(Path(sys.argv[1]), Path(sys.argv[2]), seconds_per_text=0.005) as router:
        router.refresh(embed=True)
    """
)


def test_worktrees_indexing_at_once_lose_nothing(tmp_path: Path) -> None:
    main, worktree = _repository(tmp_path)
    for project, side in ((main, "main"), (worktree, "feat")):
        for n in range(30):
            write(project / ".serena" / "memories", f"{side}/note-{n}", f"# {side} note {n}\n\nOnly on {side}: {n}.\n")
    log = tmp_path / "embedded.log"
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(project), str(log)], stderr=subprocess.PIPE)
        for project in (main, worktree)
    ]
    for worker in workers:
        _, errors = worker.communicate(timeout=300)
        assert worker.returncode == 0, errors.decode()
    counts = embedded(log)
    texts = len(SAMPLE) + 60  # one chunk each
    assert len(counts) == texts and _vectors(main) == texts  # every text's vector reached the shared file
    assert _chunks(main) == _chunks(worktree) == len(SAMPLE) + 30  # and each index has all of its own
    assert set(counts.values()) == {1}  # the common memories too: one process claimed each, the other waited
