"""Folders are context: a memory borrows its folder overview's words in lexical scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrouter import Router
from memrouter.core.model import Filters
from memrouter.index.folders import FolderContext
from memrouter.index.sqlite.lexical import LexicalIndex
from memrouter.index.text import query_terms

(KARAOKE,) = query_terms("karaoke")  # the term as indexed (stemmed)

PROJECTS = {
    "lanternfish": "a self-hosted karaoke queue for bars: singers join from their phones",
    "bramble": "appointment scheduling for veterinary clinics, with reminders for pet owners",
    "quokka": "inventory and batch tracking for small breweries",
}


def project_folder(root: Path, folder: str, domain: str) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "project_overview.md").write_text(
        f"# Project overview\n\n{folder.title()} is {domain}.\n\nStack: Python, FastAPI, Celery, PostgreSQL.\n",
        encoding="utf-8",
    )
    (root / folder / "suggested_commands.md").write_text(
        f"# Suggested commands\n\n- `make worker`: start the background worker ({folder}-worker)\n"
        "- `make migrate`: apply the database migrations\n- `make test`: run the tests\n",
        encoding="utf-8",
    )
    (root / folder / "style_and_conventions.md").write_text(
        "# Style and conventions\n\nType hints everywhere, ruff for linting, one error class per module.\n",
        encoding="utf-8",
    )


def folder_memories(root: Path) -> Path:
    """Three project folders, a folder without an overview, and top-level memories with a README."""
    for folder, domain in PROJECTS.items():
        project_folder(root, folder, domain)
    (root / "team" / "notes").mkdir(parents=True)
    (root / "team" / "notes" / "worker_notes.md").write_text(
        "# Worker notes\n\nThe background worker restarts nightly.\n", encoding="utf-8"
    )
    (root / "suggested_commands.md").write_text(
        "# Suggested commands\n\n- `make worker`: start the background worker\n", encoding="utf-8"
    )
    (root / "README.md").write_text("# Readme\n\nKaraoke notes for the whole team.\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Router:
    base = tmp_path_factory.mktemp("folders")
    root = folder_memories(base / "memories")
    opened = Router.open(root=root, index_dir=base / "index", watch=False)
    opened.refresh(embed=False)
    return opened


def _names(router: Router, query: str, large_from: int = 1_000_000) -> list[str]:
    conn = router.workspace.index.conn
    names = dict(conn.execute("SELECT id, name FROM memories"))
    return [names[r.memory_id] for r in LexicalIndex(large_from=large_from).search(conn, query, Filters(), 10)]


@pytest.mark.parametrize("large_from", [1_000_000, 0])
def test_a_question_naming_the_project_by_its_domain_finds_that_folders_memory(router: Router, large_from: int) -> None:
    # Every folder's suggested_commands says "background worker": only the overview says "karaoke".
    assert _names(router, "karaoke app: which command starts the background worker?", large_from)[0] == (
        "lanternfish/suggested_commands"
    )
    assert _names(router, "veterinary clinics database migrations", large_from)[0] == "bramble/suggested_commands"
    assert _names(router, "brewery linting conventions", large_from)[0] == "quokka/style_and_conventions"


@pytest.mark.parametrize("large_from", [1_000_000, 0])
def test_the_overview_still_answers_the_domain_alone(router: Router, large_from: int) -> None:
    assert _names(router, "veterinary clinic appointments", large_from)[0] == "bramble/project_overview"


def test_top_level_memories_and_folders_without_an_overview_borrow_nothing(router: Router) -> None:
    found = _names(router, "karaoke background worker")
    # the top-level README says "karaoke", but lends nothing to the top-level commands
    assert found.index("lanternfish/suggested_commands") < found.index("suggested_commands")
    conn = router.workspace.index.conn
    lexical = LexicalIndex()
    ids = dict(conn.execute("SELECT name, id FROM memories"))
    lexical.search(conn, "karaoke", Filters(), 10)
    borrowed = set(lexical._contributions[KARAOKE])
    assert ids["suggested_commands"] not in borrowed
    assert ids["team/notes/worker_notes"] not in borrowed


def test_lending_never_adds_to_a_memorys_own_score() -> None:
    context = FolderContext(
        [(1, "a/project_overview"), (2, "a/commands"), (3, "a/deep/notes"), (4, "b/commands")], share=0.5
    )
    assert context.members == {1: [2, 3]}
    lent = context.lend({1: 4.0, 2: 3.0, 4: 1.0})
    assert lent == {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0}  # 2 keeps its own 3.0 (more than 2.0), never 5.0
    assert context.lend({2: 1.0}) == {2: 1.0}  # no overview hit: nothing lent
    assert not FolderContext([(1, "a/project_overview")])  # nobody to lend to
    assert not FolderContext([(1, "a/notes"), (2, "b/notes")], share=0.5)


def test_dense_similarity_is_lent_the_same_way() -> None:
    context = FolderContext([(1, "a/overview"), (2, "a/commands"), (3, "a/style"), (4, "b/commands")], share=0.5)
    asked: list[int] = []

    def similarity(memory_id: int) -> float:
        asked.append(memory_id)
        return 0.8

    # 2 and 3 rise to half the overview's 0.8 unless higher already; 4 has no overview; the overview is
    # looked up once, outside the candidates
    assert context.lend_similarity({2: 0.3, 3: 0.5, 4: 0.1}, similarity) == {2: 0.4, 3: 0.5, 4: 0.1}
    assert asked == [1]
    assert context.lend_similarity({1: 0.2, 2: 0.3}, similarity) == {1: 0.2, 2: 0.3}


def test_the_default_share_is_the_configured_default() -> None:
    from memrouter.config.settings import SearchConfig
    from memrouter.index.folders import FOLDER_SHARE

    assert SearchConfig().folder_context == FOLDER_SHARE


def test_the_nearest_overview_up_the_path_lends() -> None:
    context = FolderContext([(1, "org/README"), (2, "org/app/overview"), (3, "org/app/x/notes"), (4, "org/lib/notes")])
    assert context.members == {1: [2, 4], 2: [3]}


def test_coverage_counts_borrowed_terms_but_not_in_the_idf(router: Router) -> None:
    conn = router.workspace.index.conn
    ids = dict(conn.execute("SELECT name, id FROM memories"))
    lexical = LexicalIndex()
    assert lexical.coverage(conn, "karaoke worker", ids["lanternfish/suggested_commands"]) == pytest.approx(1.0)
    assert lexical.coverage(conn, "karaoke worker", ids["bramble/suggested_commands"]) < 1.0
    assert lexical._df[KARAOKE] == 2  # the overview and the README, not the three borrowers


def test_dense_search_lends_through_the_real_model(tmp_path: Path) -> None:
    from memrouter.config.settings import Config
    from memrouter.core.records import replace

    root = tmp_path / "memories"
    for folder, domain in PROJECTS.items():
        project_folder(root, folder, domain)
    config = Config.load(root=root, index_dir=tmp_path / "index")
    ranks = {}
    for share in (0.0, 0.9):
        shared = replace(config, search=replace(config.search, folder_context=share))
        with Router(shared, watch=False) as router:
            router.refresh(embed=True)
            names = [hit.name for hit in router.search("karaoke: start the worker", mode="semantic", limit=15)]
            ranks[share] = [name for name in names if name.endswith("suggested_commands")]
    # the three command lists say the same words; the karaoke overview lends only to its own folder
    assert ranks[0.9][0] == "lanternfish/suggested_commands", ranks
    assert ranks[0.0][0] != "lanternfish/suggested_commands", ranks  # without lending the words decide
    assert len(ranks[0.0]) == len(ranks[0.9]) == 3
