"""Folders are context on the PostgreSQL index as on the local one (``memrouter.index.folders``)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from index.test_folders import PROJECTS, folder_memories, project_folder
from postgres.support import assert_no_fallback

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.records import replace

QUESTIONS = (
    "karaoke app: which command starts the background worker?",
    "veterinary clinics database migrations",
    "brewery linting conventions",
    "veterinary clinic appointments",
    "karaoke background worker",
)


def _memories(root: Path) -> Path:
    folder_memories(root)
    for folder in PROJECTS:  # no two style memories alike: the order of ties would be each store's own
        (root / folder / "style_and_conventions.md").write_text(
            f"# Style and conventions\n\nType hints everywhere in {folder}, ruff for linting.\n", encoding="utf-8"
        )
    return root


def _router(root: Path, index_dir: Path, embedder: str = "hash") -> Router:
    return Router(replace(Config.load(root=root, index_dir=index_dir), embedder=embedder), watch=False)


def _use_postgres(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_folders_lend_alike_on_both_stores(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    root = _memories(tmp_path / "memories")
    found = {}
    for store in ("sqlite", "postgres"):
        if store == "postgres":
            _use_postgres(monkeypatch, database_url)
        with _router(root, tmp_path / store) as router:
            router.refresh(embed=True)
            # every memory, so no cut falls between equal scores, which order by each store's own rule
            found[store] = [
                sorted(((hit.name, round(hit.score, 4)) for hit in router.search(question, limit=20, mode=mode)),
                       key=lambda hit: (-hit[1], hit[0]))
                for question in QUESTIONS
            ]  # fmt: skip
            assert_no_fallback(router)
    if mode == "hybrid":  # fusion reads ranks, and a tie's rank is each store's own: the same winners
        assert [hits[0][0] for hits in found["postgres"]] == [hits[0][0] for hits in found["sqlite"]]
    else:
        assert found["postgres"] == found["sqlite"]
    if mode == "lexical":  # the domain is only in the overview: the sibling ranks first by borrowing it
        assert [hits[0][0] for hits in found["postgres"][:4]] == [
            "lanternfish/suggested_commands", "bramble/suggested_commands", "quokka/style_and_conventions",
            "bramble/project_overview",
        ]  # fmt: skip


def test_dense_search_in_postgresql_lends_through_the_real_model(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "memories"
    for folder, domain in PROJECTS.items():
        project_folder(root, folder, domain)
    _use_postgres(monkeypatch, database_url)
    with _router(root, tmp_path / "index", embedder="minilm") as router:
        router.refresh(embed=True)
        names = [hit.name for hit in router.search("karaoke: start the worker", mode="semantic", limit=15)]
        assert_no_fallback(router)
    # the three command lists say the same words; the karaoke overview lends only to its own folder
    assert [name for name in names if name.endswith("suggested_commands")][0] == "lanternfish/suggested_commands"


def _overviews(url: str) -> dict[str, str | None]:
    with psycopg.connect(url) as conn:
        return dict(
            conn.execute(  # type: ignore[arg-type]
                "SELECT m.name, o.name FROM memories m LEFT JOIN memories o ON o.id = m.overview_id ORDER BY m.name"
            ).fetchall()
        )


def test_overviews_follow_the_files(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _memories(tmp_path / "memories")
    _use_postgres(monkeypatch, database_url)
    question = "karaoke background worker"
    with _router(root, tmp_path / "index") as router:
        assert router.search(question, mode="lexical")[0].name == "lanternfish/suggested_commands"
        owners = _overviews(database_url)
        assert (
            owners["lanternfish/suggested_commands"]
            == owners["lanternfish/style_and_conventions"]
            == ("lanternfish/project_overview")
        )
        assert owners["lanternfish/project_overview"] is None  # no overview above it
        assert owners["suggested_commands"] is None and owners["team/notes/worker_notes"] is None

        text = (root / "lanternfish" / "project_overview.md").read_text(encoding="utf-8")
        router.delete("lanternfish/project_overview")
        assert router.search(question, mode="lexical")[0].name != "lanternfish/suggested_commands"
        assert _overviews(database_url)["lanternfish/suggested_commands"] is None

        router.save(text, name="lanternfish/overview")  # back, under another overview name
        assert router.search(question, mode="lexical")[0].name == "lanternfish/suggested_commands"
        assert _overviews(database_url)["lanternfish/suggested_commands"] == "lanternfish/overview"
        assert_no_fallback(router)


def test_rows_from_before_the_overviews_get_them_on_the_next_search(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _memories(tmp_path / "memories")
    _use_postgres(monkeypatch, database_url)
    question = "karaoke background worker"
    with _router(root, tmp_path / "index") as router:
        router.refresh(embed=False)
        first = router.search(question, mode="lexical")[0].name
    with psycopg.connect(database_url) as conn:  # what migration 0005 leaves in a database with rows
        conn.execute("UPDATE memories SET overview_id = NULL")
        conn.execute("UPDATE projects SET overviews_known = false, mark = ''")
    with _router(root, tmp_path / "index") as router:
        assert router.search(question, mode="lexical")[0].name == first == "lanternfish/suggested_commands"
        assert_no_fallback(router)
    assert _overviews(database_url)["bramble/suggested_commands"] == "bramble/project_overview"
