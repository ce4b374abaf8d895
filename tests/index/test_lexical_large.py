"""The numpy scoring path for big corpora ranks exactly like the dictionary path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memrouter import Router
from memrouter.core.model import Filters
from memrouter.index.sqlite.lexical import LexicalIndex

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "ai-agents-1026"
QUERIES = [
    "git worktree cleanup", "pr review bot comments", "session protocol validation", "merge conflict resolution",
    "ci failure flaky test flaky", "powershell to python migration", "the of and", "zzzz-not-a-word", "adr review",
    "how do we handle secrets in workflows", "memory index keyword lookup", "pre-commit hook timeout",
]  # fmt: skip


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Router:
    base = tmp_path_factory.mktemp("large")
    root = base / "memories"
    root.mkdir()
    for path in sorted(CORPUS.rglob("*.md"))[:400]:
        target = root / path.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    opened = Router.open(root=root, index_dir=base / "index", watch=False)
    opened.refresh(embed=False)
    return opened


@pytest.mark.parametrize(
    "filters",
    [Filters(), Filters(prefix="ci/"), Filters(channels=("long_term",), now="2026-01-01T00:00:00Z"),
     Filters(within=frozenset(range(0, 400, 3)))],
)  # fmt: skip
def test_numpy_scoring_matches_the_dictionary_path(router: Router, filters: Filters) -> None:
    conn = router.workspace.index.conn
    small, large = LexicalIndex(), LexicalIndex(large_from=0)
    compared = 0
    for query in QUERIES:
        for limit in (1, 10, 50):
            expected = small.search(conn, query, filters, limit)
            found = large.search(conn, query, filters, limit)
            assert [r.memory_id for r in found] == [r.memory_id for r in expected], (query, limit)
            assert [r.score for r in found] == pytest.approx([r.score for r in expected], rel=1e-5)
            compared += len(found)
    assert compared > 100  # the queries do find things


def test_numpy_scoring_follows_writes(router: Router) -> None:
    large = LexicalIndex(large_from=0)
    conn = router.workspace.index.conn
    assert large.search(conn, "xylophonequartz", Filters(), 5) == []
    router.save("# Xylophone\n\nxylophonequartz tuning notes\n", "zz/xylophone")
    found = large.search(conn, "xylophonequartz", Filters(), 5)
    assert len(found) == 1 and found[0].score > 0
