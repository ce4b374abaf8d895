"""Eight agents in eight worktrees of one repository, saving and searching at once (real processes).

Each agent is a process in its own worktree (`git worktree add`, its own branch) with its own index; all share
the repository's vector file. Every process counts the texts its embedder embeds in one log
(``memrouter.testing.counting_embedder``), so the test proves across processes: no save is lost, each index
holds its own memories and not the others', and each text (the memories all worktrees share, and each agent's
own) is embedded once; then each agent's next search with `--branches local` finds the others' memories.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import SAMPLE, commit_all_as, git, write

from memrouter.index.sqlite.shared_vectors import text_hash
from memrouter.testing.counting_embedder import embedded

AGENTS = 8
SAVES = 6

AGENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memrouter.testing.counting_embedder import counted_router

    worktree, log, go, me = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    with counted_router(worktree, log, seconds_per_text=0.01) as router:  # a model's pace: the processes overlap
        while not go.exists():
            time.sleep(0.005)
        router.refresh(embed=True)  # every agent indexes the shared memories at the same moment
        for n in range(int(sys.argv[5])):
            router.save(f"Agent {me} found fact {n}: the cache{me}x{n} key expires after {me * 100 + n} s.",
                        name=f"agent-{me}/fact-{n}")
            router.refresh(embed=True)
            hits = router.search(f"agent {me} question {n} about cache{me}x{n}", mode="semantic")
            assert any(hit.name == f"agent-{me}/fact-{n}" for hit in hits), [hit.name for hit in hits]
    """
)


def _repository(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A main checkout with the sample memories committed and ``AGENTS`` worktrees, each on its own branch."""
    main = tmp_path / "main"
    for name, text in SAMPLE.items():
        write(main / ".serena" / "memories", name, text)
    (main / ".gitignore").write_text(".memrouter/\n")
    commit_all_as(main, "Ada", "ada@example.com")
    worktrees = [tmp_path / f"wt-{n}" for n in range(AGENTS)]
    for n, worktree in enumerate(worktrees):
        git(main, "worktree", "add", "-q", str(worktree), "-b", f"agent-{n}")
    return main, worktrees


def _indexed(worktree: Path) -> set[str]:
    with sqlite3.connect(worktree / ".memrouter" / "index.sqlite") as conn:
        return {row[0] for row in conn.execute("SELECT name FROM memories")}


def each_sees_the_others(worktrees: list[Path]) -> None:
    """Each agent's next search with `--branches local` finds every other agent's memories, which live only in
    the other worktrees (uncommitted there): one search an agent, naming each other agent's first fact."""
    for me, worktree in enumerate(worktrees):
        others = [other for other in range(AGENTS) if other != me]
        query = " ".join(f"cache{other}x0" for other in others)
        done = subprocess.run(
            [sys.executable, "-m", "memrouter", "search", query, "--branches", "local", "--mode", "lexical",
             "--limit", "20", "--format", "json"], cwd=worktree, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        found = {hit["name"] for hit in json.loads(done.stdout)["results"]}
        assert {f"agent-{other}/fact-0" for other in others} <= found, (me, sorted(found))


@pytest.mark.sqlite_only("each worktree's own local index; with PostgreSQL the run gives every process one project")
def test_eight_agents_in_eight_worktrees_lose_nothing_and_embed_each_text_once(tmp_path: Path) -> None:
    main, worktrees = _repository(tmp_path)
    log, go = tmp_path / "embedded.log", tmp_path / "go"
    agents = [
        subprocess.Popen(
            [sys.executable, "-c", AGENT, str(worktree), str(log), str(go), str(n), str(SAVES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for n, worktree in enumerate(worktrees)
    ]
    go.touch()
    outputs = [agent.communicate(timeout=600) for agent in agents]
    assert [agent.returncode for agent in agents] == [0] * AGENTS, [err.decode()[-2000:] for _, err in outputs]

    # 0 lost writes: every save's file is there with its text, and each index has its own memories, only those
    for me, worktree in enumerate(worktrees):
        for n in range(SAVES):
            text = (worktree / ".serena" / "memories" / f"agent-{me}" / f"fact-{n}.md").read_text()
            assert f"the cache{me}x{n} key expires after {me * 100 + n} s." in text
        assert _indexed(worktree) == set(SAMPLE) | {f"agent-{me}/fact-{n}" for n in range(SAVES)}
        assert {folder.name for folder in (worktree / ".serena" / "memories").glob("agent-*")} == {f"agent-{me}"}

    # each text embedded once across the eight processes: the shared memories and every agent's own
    counts = embedded(log)
    queries = {text_hash(f"agent {me} question {n} about cache{me}x{n}") for me in range(AGENTS) for n in range(SAVES)}
    memories = {digest: count for digest, count in counts.items() if digest not in queries}
    assert len(memories) >= len(SAMPLE) + AGENTS * SAVES  # one chunk at least for each memory
    assert set(memories.values()) == {1}, sorted(memories.values())[-5:]

    # and each sees the others' memories in its next search across branches
    each_sees_the_others(worktrees)
