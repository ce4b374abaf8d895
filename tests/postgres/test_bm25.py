"""The pruned BM25F scan of the PostgreSQL index: common words read their best postings only, and what a
search returns is scored exactly (``memrouter.index.postgres.bm25``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import write
from index.test_folders import folder_memories
from postgres.test_lexical_statistics import PROJECT, open_router, scores_agree

from memrouter.core.model import Filters
from memrouter.index.postgres import bm25
from memrouter.index.postgres.connect import Database
from memrouter.index.postgres.impact import IMPACT
from memrouter.index.postgres.store import PgIndex
from memrouter.index.text import query_terms

EVERYTHING = Filters()


def _wombats(root: Path) -> None:
    """Forty memories saying "wombat" (each a different number of times), three of them "quokka" too."""
    for n in range(40):
        extra = " quokka sighting" if n in (5, 17, 33) else ""
        moss = "moss " * n  # no two notes of one length: no ties
        write(root, f"bulk/w{n:02}", f"# Note {n}\n\n{'wombat ' * (1 + n % 7)}burrows near the creek{extra}. {moss}\n")


def _exact(store: PgIndex, terms: list[str], share: float = 0.0) -> dict[str, float]:
    return dict(store.lexical(terms, EVERYTHING, 1000, share=share, cap=None))


@pytest.fixture
def wombats(tmp_path: Path, database_url: str) -> Iterator[PgIndex]:
    """The forty notes of ``_wombats`` in PostgreSQL, read through a ``PgIndex``."""
    root = tmp_path / "repo" / ".serena" / "memories"
    _wombats(root)
    with open_router(root, tmp_path / "index", database_url) as router:
        router.publish()
    database = Database(database_url)
    yield PgIndex(database, PROJECT)
    database.close()


@pytest.mark.parametrize("cap", [1, 2, 3, 5])
def test_a_pruned_search_finds_the_exact_scans_best(wombats: PgIndex, cap: int) -> None:
    store = wombats
    for query in ("wombat quokka", "wombat burrows", "creek moss", "wombat burrows quokka creek moss"):
        terms = query_terms(query)
        for limit in (1, 3, 5):
            best = sorted(_exact(store, terms).items(), key=lambda item: (-item[1], item[0]))[:limit]
            found = store.lexical(terms, EVERYTHING, limit, cap=cap)
            assert [name for name, _ in found] == [name for name, _ in best], (query, limit)
            assert [score for _, score in found] == pytest.approx([score for _, score in best])
    # "quokka" (3 notes) outweighs any number of "wombat"s: its notes come first, their "wombat" counted too
    terms = query_terms("wombat quokka")
    assert {name for name, _ in store.lexical(terms, EVERYTHING, 3, cap=cap)} == {
        "bulk/w05",
        "bulk/w17",
        "bulk/w33",
    }
    tagged = store.lexical(terms, Filters(prefix="bulk/w1"), 3, cap=cap)  # filters apply in both passes
    best = sorted(((n, v) for n, v in _exact(store, terms).items() if n.startswith("bulk/w1")), key=lambda i: -i[1])
    assert [name for name, _ in tagged] == [name for name, _ in best[:3]]


@pytest.mark.parametrize("cap", [1, 2, 5])
def test_without_the_exact_pass_what_a_search_returns_it_scores_exactly(wombats: PgIndex, cap: int) -> None:
    store = wombats
    for query in ("wombat quokka", "wombat burrows", "creek moss"):
        terms = query_terms(query)
        exact = _exact(store, terms)
        found = bm25.search(store.scope, terms, EVERYTHING, 5, cap=cap, exact_pass=0)  # the first pass alone
        assert found and [s for _, s in found] == pytest.approx([exact[name] for name, _ in found]), query
        assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)


def test_a_cap_above_every_words_postings_is_the_exact_scan(wombats: PgIndex) -> None:
    store = wombats
    terms = query_terms("wombat burrows quokka creek")
    exact = store.lexical(terms, EVERYTHING, 10, cap=None)
    for found in (store.lexical(terms, EVERYTHING, 10, cap=40), store.lexical(terms, EVERYTHING, 10)):  # 2000
        assert [name for name, _ in found] == [name for name, _ in exact]
        assert [score for _, score in found] == pytest.approx([score for _, score in exact])


@pytest.mark.parametrize("cap", [1, 3])
def test_a_pruned_search_lends_exactly_too(tmp_path: Path, database_url: str, cap: int) -> None:
    root = folder_memories(tmp_path / "repo" / ".serena" / "memories")
    with open_router(root, tmp_path / "index", database_url) as router:
        router.publish()
    database = Database(database_url)
    try:
        store = PgIndex(database, PROJECT)
        for query in ("karaoke background worker", "veterinary clinics database migrations", "brewery linting"):
            terms = query_terms(query)
            exact = _exact(store, terms, share=0.9)
            found = store.lexical(terms, EVERYTHING, 3, share=0.9, cap=cap)
            assert found and [s for _, s in found] == pytest.approx([exact[name] for name, _ in found]), query
        if cap >= 3:  # "karaoke" (the overview and the README) is read whole, and lent
            terms = query_terms("karaoke background worker")
            assert store.lexical(terms, EVERYTHING, 1, share=0.9, cap=cap)[0][0] == "lanternfish/suggested_commands"
    finally:
        database.close()


def _impacts_exact(url: str) -> float:
    """Every posting's impact as computed against the project's reference length; that length."""
    with psycopg.connect(url) as conn:
        (reference,) = conn.execute("SELECT impact_length FROM projects WHERE project = %s", (PROJECT,)).fetchone()  # type: ignore[misc]
        (wrong,) = conn.execute(  # type: ignore[misc]
            f"SELECT count(*) FROM postings WHERE project = %s AND abs(impact - "
            f"{IMPACT.format(tf='tf', length='length', ref='%s')}) > 1e-5",
            (PROJECT, reference),
        ).fetchone()
        assert wrong == 0
        return float(reference)


def test_impacts_follow_the_mean_length(memories: Path, tmp_path: Path, database_url: str) -> None:
    with open_router(memories, tmp_path / "index", database_url) as router:
        router.publish()
        first = _impacts_exact(database_url)
        write(memories, "notes/short", "# Short\n\nquokka\n")
        router.publish()
        assert _impacts_exact(database_url) == first  # a small drift keeps the reference
        for n in range(12):  # the mean length more than doubles: every impact is recomputed
            write(
                memories, f"long/l{n}", f"# Long {n}\n\n" + " ".join(f"word{k} postgres" for k in range(400 + n)) + "\n"
            )
        router.publish()
        with psycopg.connect(database_url) as conn:
            (avgdl,) = conn.execute("SELECT avgdl FROM projects WHERE project = %s", (PROJECT,)).fetchone()  # type: ignore[misc]
        assert avgdl > 2 * first
        assert _impacts_exact(database_url) == pytest.approx(avgdl)
        scores_agree(database_url, router, "postgres migration deploy")


def test_a_database_from_before_the_impacts_gets_them(memories: Path, tmp_path: Path, database_url: str) -> None:
    with open_router(memories, tmp_path / "index", database_url) as router:
        router.publish()
    with psycopg.connect(database_url, autocommit=True) as conn:  # the rows as migration 0005 left them
        conn.execute("ALTER TABLE postings DROP COLUMN impact")  # its index goes with it
        conn.execute("ALTER TABLE projects DROP COLUMN impact_length")
        conn.execute(
            "ALTER TABLE postings DROP CONSTRAINT postings_pkey, "
            "ADD CONSTRAINT postings_pkey PRIMARY KEY (project, term, memory_id) INCLUDE (tf, length)"
        )
        conn.execute("DELETE FROM memrouter_migrations WHERE name = '0006_postings_impact'")
    with open_router(memories, tmp_path / "index", database_url) as router:
        scores_agree(database_url, router, "postgres migration deploy")  # migrated on opening
        _impacts_exact(database_url)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT to_regclass('postings_impact')").fetchone() == ("postings_impact",)
