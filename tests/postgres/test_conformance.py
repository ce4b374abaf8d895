"""The same behaviour tests over the SQLite index and the PostgreSQL index (the ``router`` fixture runs both).

The tests below are the shared search, get and list tests, imported as they
are: each runs once per store (``conftest.STORES``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write
from index.test_lexical import (
    test_cjk_text_is_searchable,
    test_filters_apply_inside_the_retriever,
    test_hit_shape_and_why,
    test_hostile_queries_are_just_text,
    test_invalid_queries_are_refused,
    test_limit_is_validated,
    test_queries_never_execute_sql,
    test_same_stem_in_two_folders_are_two_memories,
    test_status_filter_hides_obsolete,
    test_title_and_name_outweigh_body,
)
from postgres.support import assert_no_fallback
from test_freshness import test_hand_edits_show_up_on_the_next_search
from test_hostile_input import test_any_filter_value_is_a_result_or_invalid_input
from test_router import (
    test_bad_saves_change_nothing,
    test_index_refresh_is_incremental,
    test_save_get_list_delete_round_trip,
    test_save_keeps_unknown_front_matter_and_name_from_title,
    test_save_with_expected_hash_detects_concurrent_edit,
)

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.records import replace

__all__ = [
    "test_any_filter_value_is_a_result_or_invalid_input", "test_bad_saves_change_nothing",
    "test_cjk_text_is_searchable", "test_filters_apply_inside_the_retriever", "test_hand_edits_show_up_on_the_next_search",
    "test_hit_shape_and_why", "test_hostile_queries_are_just_text", "test_index_refresh_is_incremental",
    "test_invalid_queries_are_refused", "test_limit_is_validated", "test_queries_never_execute_sql",
    "test_same_stem_in_two_folders_are_two_memories", "test_save_get_list_delete_round_trip",
    "test_save_keeps_unknown_front_matter_and_name_from_title", "test_save_with_expected_hash_detects_concurrent_edit",
    "test_status_filter_hides_obsolete", "test_title_and_name_outweigh_body",
]  # fmt: skip


def hashing_router(memories: Path, index_dir: Path) -> Router:
    """A router embedding with the deterministic hashing embedder (no model files)."""
    return Router(replace(Config.load(root=memories, index_dir=index_dir), embedder="hash"))


# Each names something of every sample memory, so no two memories tie on similarity: the order of ties is
# a store's own (the local index's row order), not behaviour. ``test_the_queries_leave_no_ties`` keeps it so.
QUERIES = (
    "postgres staging commit flaky quarantine caching redis deployment fridays sprint",
    "transactions orders issue mood payment incident retry job lru search note heading slow",
    "database storage imperative reference timed load twice fail research api windows notes",
)


def test_the_queries_leave_no_ties(memories: Path, tmp_path: Path) -> None:
    write(memories, "sprint/notes", "---\nchannel: sprint\n---\n# Sprint notes\n\nthe staging database is slow\n")
    with hashing_router(memories, tmp_path / "idx") as router:
        router.refresh(embed=True)
        for query in QUERIES:
            scores = [hit.score for hit in router.search(query, limit=50, mode="semantic", include_history=True)]
            assert len(scores) == 7 and len(set(scores)) == len(scores), scores


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_every_mode_ranks_alike_on_both_stores(memories: Path, tmp_path: Path, database_url: str,
                                               monkeypatch: pytest.MonkeyPatch, mode: str) -> None:  # fmt: skip
    write(memories, "sprint/notes", "---\nchannel: sprint\n---\n# Sprint notes\n\nthe staging database is slow\n")
    results = {}
    for store in ("sqlite", "postgres"):
        if store == "postgres":
            monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
            monkeypatch.setenv("MEMROUTER_PROJECT", "project")
        with hashing_router(memories, tmp_path / store) as router:
            router.refresh(embed=True)
            found = []
            for query in QUERIES:
                for filters in ({}, {"prefix": "ci/"}, {"channels": ["sprint"]}):
                    hits = router.search(query, limit=5, mode=mode, **filters)
                    found.append([(h.name, round(h.score, 4), h.snippet) for h in hits])
            results[store] = found
            assert_no_fallback(router)
    for number, (local, shared) in enumerate(zip(results["sqlite"], results["postgres"], strict=True)):
        assert local == shared, number
    assert any(results["sqlite"])


def test_list_filters_alike_on_both_stores(memories: Path, tmp_path: Path, database_url: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    listed = {}
    for store in ("sqlite", "postgres"):
        if store == "postgres":
            monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
            monkeypatch.setenv("MEMROUTER_PROJECT", "project")
        with Router.open(root=memories, index_dir=tmp_path / store) as router:
            router.save("# Quarantine\n\nflaky", name="ci/quarantine", tags=["ci", "flaky"], kind="convention")
            listed[store] = [
                router.list(),
                router.list("ci/"),
                router.list(tags="flaky"),
                router.list(kinds="convention"),
                router.list(channels="sprint"),
            ]
            assert_no_fallback(router)
    assert listed["sqlite"] == listed["postgres"]
    assert [len(part) for part in listed["sqlite"]][1:4] == [len(listed["sqlite"][1]), 1, 1]
