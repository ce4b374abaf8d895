"""The real 1026-memory corpus: everything is indexed, nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrouter import Router


@pytest.fixture(scope="module")
def corpus_router(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from conftest import CORPUS_1026

    if not CORPUS_1026.is_dir():
        pytest.skip("../shared/corpora/ai-agents-1026 is not available")
    with Router.open(root=CORPUS_1026, index_dir=tmp_path_factory.mktemp("idx")) as router:
        yield router


def test_every_file_is_indexed_under_its_full_name(corpus_router: Router) -> None:
    status = corpus_router.status()
    assert status["memories"]["total"] == 1026
    assert status["problems"] == {}
    names = {item.name for item in corpus_router.list()}
    assert {"ci-infrastructure-observations", "ci/ci-infrastructure-observations"} <= names


def test_both_same_stem_files_are_found(corpus_router: Router) -> None:
    hits = corpus_router.search("ci infrastructure observations", limit=10, mode="lexical")
    found = {hit.name for hit in hits}
    assert {"ci-infrastructure-observations", "ci/ci-infrastructure-observations"} <= found


def test_both_front_matter_styles_parse(corpus_router: Router) -> None:
    claude_style = corpus_router.get("implementation/implementation-009-req011-tdd-first-shipment")
    assert claude_style.kind == "implementation" and not claude_style.problems
    citation_style = corpus_router.get("testing/test-citation-verification")
    assert citation_style.title == "Test citation verification" and "testing" in citation_style.tags


def test_reading_never_changes_a_file(corpus_router: Router) -> None:
    from conftest import CORPUS_1026

    before = {p: p.stat().st_mtime_ns for p in Path(CORPUS_1026).rglob("*.md")}
    corpus_router.refresh(full=True)
    corpus_router.search("git worktree", mode="lexical")
    assert {p: p.stat().st_mtime_ns for p in Path(CORPUS_1026).rglob("*.md")} == before


def test_keyword_queries_find_their_memory(corpus_router: Router) -> None:
    cases = {
        "worktree cleanup automation": "git/git-worktree-cleanup",
        "pre-push suite timeout budget": "decision-pre-push-suite-timeout-budget",
        "shallow fetch kills merge base": "decision-shallow-fetch-kills-merge-base-in-ci",
    }
    for query, expected in cases.items():
        names = [hit.name for hit in corpus_router.search(query, limit=3, mode="lexical")]
        assert expected in names, (query, names)
