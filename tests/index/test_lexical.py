from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import write

from memrouter import Router
from memrouter.core.errors import InvalidInput


def names(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.name for hit in hits]


def test_title_and_name_outweigh_body(router: Router, memories: Path) -> None:
    write(memories, "zz-mentions", "# Unrelated\n\n" + "Some text mentioning caching once.\n")
    hits = router.search("caching", mode="lexical")
    assert names(hits)[0] == "sprints/2026-w47/research-caching"
    assert "zz-mentions" in names(hits)


def test_hit_shape_and_why(router: Router) -> None:
    hit = router.search("postgres transactions", mode="lexical")[0]
    assert hit.name == "adr/adr-001-postgres"
    assert hit.source == "canonical" and hit.channel == "long_term" and hit.kind == "adr"
    assert hit.path and hit.path.endswith("adr/adr-001-postgres.md")
    assert len(hit.hash) == 64 and hit.score > 0
    assert hit.why[0].retriever == "lexical" and hit.why[0].rank == 1
    assert "**" in hit.snippet
    data = hit.to_dict()
    assert {"name", "title", "score", "source", "channel", "path", "hash", "why"} <= set(data)


def test_same_stem_in_two_folders_are_two_memories(router: Router) -> None:
    assert set(names(router.search("flaky tests", mode="lexical"))) >= {"ci/flaky-tests", "incidents/flaky-tests"}


@pytest.mark.parametrize(
    "query",
    [
        "x'; DROP TABLE memories; --", "NEAR(a b)", '"unbalanced', "a*", "-minus", "col:value",
        "title:postgres", "(((", "?", "' OR 1=1 --", "日本語のテキスト", "AND OR NOT", "🐢 emoji",
    ],
)  # fmt: skip
def test_hostile_queries_are_just_text(router: Router, query: str) -> None:
    before = router.status()["memories"]["total"]
    router.search(query, mode="lexical")
    assert router.status()["memories"]["total"] == before


def test_invalid_queries_are_refused(router: Router) -> None:
    for bad in ["", "   \t", "a\x00b", "x" * 1001, "bell\x07"]:
        with pytest.raises(InvalidInput):
            router.search(bad)
    pasted = router.search("flaky\nincident\tpayment", mode="lexical")
    assert [hit.name for hit in pasted] == [hit.name for hit in router.search("flaky incident payment", mode="lexical")]
    assert pasted[0].name == "incidents/flaky-tests"


def test_filters_apply_inside_the_retriever(router: Router, memories: Path) -> None:
    for i in range(60):
        write(memories, f"bulk/note-{i:02}", f"# Flaky note {i}\n\nflaky flaky flaky\n")
    write(memories, "adr/adr-009-flaky", "---\nkind: adr\n---\n# ADR-009 Quarantine flaky suites\n\nflaky once\n")
    hits = router.search("flaky", kinds=["adr", "research"], limit=5, mode="lexical")
    assert names(hits) == ["adr/adr-009-flaky"]  # 60 better lexical matches are filtered out first
    only_ci = router.search("flaky", prefix="ci/", mode="lexical")
    assert names(only_ci) == ["ci/flaky-tests"]
    tagged = router.search("postgres", tags=["database"], mode="lexical")
    assert names(tagged) == ["adr/adr-001-postgres"]
    assert router.search("postgres", tags=["database", "nope"], mode="lexical") == []
    sprint = router.search("flaky caching", channels=["sprint"], mode="lexical")
    assert names(sprint) == ["sprints/2026-w47/research-caching"]
    with pytest.raises(InvalidInput):
        router.search("x", channels=["nonsense"])


def test_cjk_text_is_searchable(router: Router, memories: Path) -> None:
    write(memories, "i18n/japanese", "# 翻訳メモ\n\n日本語のテキストを検索できること。\n")
    assert names(router.search("日本語", mode="lexical"))[0] == "i18n/japanese"


def test_status_filter_hides_obsolete(router: Router, memories: Path) -> None:
    write(memories, "adr/adr-000-mongo", "---\nstatus: obsolete\n---\n# Use MongoDB for orders\n")
    assert "adr/adr-000-mongo" not in names(router.search("orders mongodb", mode="lexical"))  # not in effect
    history = router.search("orders mongodb", mode="lexical", include_history=True)
    assert [hit.validity for hit in history if hit.name == "adr/adr-000-mongo"] == ["obsolete"]
    asked = router.search("orders mongodb", statuses=["obsolete"], mode="lexical")
    assert names(asked) == ["adr/adr-000-mongo"]


def test_limit_is_validated(router: Router) -> None:
    for bad in [0, -1, 201, 2.5, True]:
        with pytest.raises(InvalidInput):
            router.search("x", limit=bad)  # type: ignore[arg-type]


def test_queries_never_execute_sql(router: Router, tmp_path: Path) -> None:
    router.search("'); DELETE FROM memories; --", mode="lexical")
    conn = sqlite3.connect(router.config.index_path)
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 6


@pytest.mark.sqlite_only("reads the SQLite index's query plan")
def test_time_bounds_come_from_the_partial_index(router: Router, memories: Path, tmp_path: Path) -> None:
    """A default search reads the time bounds of the few memories that set one from the partial index
    ``memories_timed``, not by walking every row; its condition and fields are the time rules'."""
    from memrouter.core.effect import TIMED_RULES
    from memrouter.index.sqlite.filters import TIMED_CONDITION, TIMED_FIELDS

    assert set(TIMED_FIELDS) == {rule.field for rule in TIMED_RULES}
    write(memories, "sprints/expired-note", "---\nexpires: 2020-01-01\n---\n# Expired note\n\nA flaky caching note.\n")
    assert "sprints/expired-note" not in names(router.search("flaky caching note", mode="lexical"))
    with sqlite3.connect(tmp_path / "index" / "index.sqlite") as conn:
        query = f"SELECT id, {', '.join(TIMED_FIELDS)} FROM memories WHERE {TIMED_CONDITION}"
        plan = " ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "COVERING INDEX memories_timed" in plan
        assert [row[0] for row in conn.execute(f"SELECT name FROM memories WHERE {TIMED_CONDITION}")] == [
            "sprints/expired-note"
        ]
