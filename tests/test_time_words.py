"""Time words in queries, record time from git, and recency: over a real git repository with set commit dates."""

from __future__ import annotations

import calendar
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import commit, git_project
from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter import Router
from memrouter.core.errors import ConfigError
from memrouter.core.timehint import may_hold_time_words
from memrouter.core.timewords import find_time_words
from memrouter.index.sqlite.recordtime import git_head

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)  # a Monday


def at(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%d")))


@pytest.mark.parametrize(
    ("query", "phrase", "rest", "start", "end"),
    [
        ("what changed last month", "last month", "what changed", "2026-10-01", "2026-11-01"),
        ("decisions in Q4 2025", "in Q4 2025", "decisions", "2025-10-01", "2026-01-01"),
        ("2025 Q3 goals", "2025 Q3", "goals", "2025-07-01", "2025-10-01"),
        ("database since 2026-01-10", "since 2026-01-10", "database", "2026-01-10", None),
        ("deploys after 8 May, 2026", "after 8 May, 2026", "deploys", "2026-05-09", None),
        ("schema before March 2026", "before March 2026", "schema", None, "2026-03-01"),
        ("yesterday's deploy", "yesterday's", "deploy", "2026-11-22", "2026-11-23"),
        ("what did we decide in March", "in March", "what did we decide", "2026-03-01", "2026-04-01"),
        ("what did we decide in December", "in December", "what did we decide", "2025-12-01", "2026-01-01"),
        ("notes from the last 2 weeks", "from the last 2 weeks", "notes", "2026-11-09", None),
        ("notes of the past 2 weeks", "of the past 2 weeks", "notes", "2026-11-09", "2026-11-24"),
        ("incident 3 days ago", "3 days ago", "incident", "2026-11-20", "2026-11-21"),
        ("the release in 2025", "in 2025", "the release", "2025-01-01", "2026-01-01"),
        ("trips during the last week of August 2023", "during the last week of August 2023", "trips",
         "2023-08-25", "2023-09-01"),
        ("this week", "this week", "", "2026-11-23", "2026-11-30"),
        ("last weekend", "last weekend", "", "2026-11-21", "2026-11-23"),
        ("May 8, 2023 party", "May 8, 2023", "party", "2023-05-08", "2023-05-09"),
    ],
)  # fmt: skip
def test_time_phrases_become_windows(query: str, phrase: str, rest: str, start: str | None, end: str | None) -> None:
    found = find_time_words(query, NOW)
    assert found is not None and may_hold_time_words(query)
    assert (found.phrase, found.text) == (phrase, rest)
    assert (found.start or "")[:10] == (start or "") and (found.end or "")[:10] == (end or "")


@pytest.mark.parametrize(
    "query", ["may be flaky", "port 2025 is open", "march to the beat", "in ADR-012", "error 404 in 2024-13", "plain"]
)
def test_words_that_are_not_times_are_left_alone(query: str) -> None:
    assert find_time_words(query, NOW) is None


_PIECES = st.sampled_from(
    [
        "in", "since", "before", "after", "during", "the", "last", "past", "this", "previous", "first", "week", "weeks",
        "month", "quarter", "year", "day", "days", "ago", "of", "two", "3", "12", "2025", "2026-01-10", "2025-03",
        "q4", "March", "may", "Dec", "september", "yesterday", "today", "weekend", "adr-12", "mem:notes/x", "#45",
        "by", "as of", "prior to", "deploy", "notes", "'s", ",", "schema", "what", "changed",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=7).map(" ".join))
def test_the_cheap_hint_never_misses_a_time_phrase(query: str) -> None:
    """The test a search runs before loading the parser (``memrouter.core.timehint``) never says no to a phrase."""
    if find_time_words(query, NOW) is not None:
        assert may_hold_time_words(query), query


def test_a_query_without_a_hint_of_time_loads_no_parser(tmp_path: Path) -> None:
    assert not may_hold_time_words("how should I write commit messages")
    assert not may_hold_time_words("session protocol validation")


def test_references_wait_for_the_router() -> None:
    found = find_time_words("schema before ADR-012", NOW)
    assert found is not None and found.reference == "ADR-012" and found.relation == "before" and found.text == "schema"
    assert found.bounded_by("2026-02-01T00:00:00Z").end == "2026-02-01T00:00:00Z"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Memories committed on known dates: a database decision changed in September and October, ADR-012 in June."""
    project, root = git_project(tmp_path)
    (root / "adr").mkdir()
    (root / "adr" / "adr-003-queues.md").write_text("# ADR-003 Queues\n\nThe database feeds a queue of jobs.\n")
    commit(project, "queues", "2026-01-15T10:00:00+00:00")
    (root / "adr" / "adr-012-caching.md").write_text("# ADR-012 Caching\n\nCache database reads in Redis.\n")
    commit(project, "caching", "2026-06-10T10:00:00+00:00")
    (root / "database.md").write_text("# Database\n\nThe database is PostgreSQL 15.\n")
    commit(project, "database v1", "2026-09-03T10:00:00+00:00")
    (root / "database.md").write_text("# Database\n\nThe database is PostgreSQL 16.\n")
    commit(project, "database v2", "2026-10-20T10:00:00+00:00")
    return project


def open_router(project: Path, now: float | None = None) -> Router:
    return Router.open(root=project / ".serena" / "memories", watch=False, clock=lambda: now or at("2026-11-23"))


def names(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.name for hit in hits]


def test_a_time_phrase_filters_by_commit_times_and_says_so(project: Path) -> None:
    (project / "memrouter.toml").write_text('[search]\ntime_words = "filter"\n')
    with open_router(project) as router:
        assert set(names(router.search("database", mode="lexical"))) == {
            "database", "adr/adr-003-queues", "adr/adr-012-caching",
        }  # fmt: skip
        last_month = router.search("database last month", mode="lexical")
        assert names(last_month) == ["database"]
        note = [m for m in last_month[0].why if m.retriever == "time"]
        assert note and "2026-10-01..2026-11-01" in str(note[0].detail)
        assert names(router.search("database in September", mode="lexical")) == ["database"]  # v1 was committed then
        assert names(router.search("database in Q1 2026", mode="lexical")) == ["adr/adr-003-queues"]
        assert set(names(router.search("database since June 2026", mode="lexical"))) == {
            "adr/adr-012-caching", "database",
        }  # fmt: skip
        assert names(router.search("database before ADR-012", mode="lexical")) == ["adr/adr-003-queues"]
        assert names(router.search("database in 2024", mode="lexical")) == []


def test_a_query_that_is_only_a_time_phrase_lists_that_window_newest_first(project: Path) -> None:
    with open_router(project) as router:
        assert names(router.search("what changed in 2026", mode="lexical")) == [
            "database", "adr/adr-012-caching", "adr/adr-003-queues",
        ]  # fmt: skip
        assert names(router.search("this year")) == ["database", "adr/adr-012-caching", "adr/adr-003-queues"]


def test_record_times_follow_new_commits_renames_and_rewritten_history(project: Path) -> None:
    (project / "memrouter.toml").write_text('[search]\ntime_words = "filter"\n')
    root = project / ".serena" / "memories"
    with open_router(project) as router:
        assert names(router.search("database last month", mode="lexical")) == ["database"]
        (root / "database.md").rename(root / "datastore.md")
        commit(project, "rename", "2026-11-02T10:00:00+00:00")
        router.refresh()
        # renamed this month: its earlier commits (October) came along with it
        assert names(router.search("database last month", mode="lexical")) == ["datastore"]
        assert names(router.search("database this month", mode="lexical")) == ["datastore"]
        subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=project, check=True)
        router.refresh()
        assert names(router.search("database this month", mode="lexical")) == []
        (root / "notes.md").write_text("# Notes\n\nThe database backup runs nightly.\n")  # never committed: file time
        os.utime(root / "notes.md", (at("2026-11-20"), at("2026-11-20")))
        router.refresh()
        assert names(router.search("database this week", mode="lexical")) == []
        assert names(router.search("database last week", mode="lexical")) == ["notes"]


def test_front_matter_dates_count_as_activity(tmp_path: Path) -> None:
    root = tmp_path / ".serena" / "memories"
    root.mkdir(parents=True)
    (root / "turn.md").write_text("---\ncreated: 2023-05-08T13:56:00Z\n---\nCaroline went to the support group.\n")
    (root / "other.md").write_text("---\ncreated: 2023-07-01\n---\nCaroline went hiking.\n")
    (tmp_path / "memrouter.toml").write_text('[search]\ntime_words = "filter"\n')
    with Router.open(root=root, index_dir=tmp_path / "index", watch=False, clock=lambda: at("2023-08-01")) as router:
        assert names(router.search("Caroline in May 2023", mode="lexical")) == ["turn"]
        assert names(router.search("Caroline last month", mode="lexical")) == ["other"]


def test_boost_the_default_keeps_everything_but_ranks_the_window_first(project: Path) -> None:
    with open_router(project) as router:
        found = router.search("queue of jobs database in June 2026", mode="lexical")
        assert found[0].name == "adr/adr-012-caching" and "adr/adr-003-queues" in names(found)
        assert any(m.retriever == "time" and m.rank for m in found[0].why)
        # a boost also lifts what was written up to a week after the window (v1 was committed on 3 September)
        assert names(router.search("database PostgreSQL in August 2026", mode="lexical"))[0] == "database"
    (project / "memrouter.toml").write_text("[search.weights]\ntime = 0.0\n")
    with open_router(project) as router:  # the boost's list weighs nothing: text alone decides
        found = router.search("queue of jobs database in June 2026", mode="lexical")
        assert found[0].name == "adr/adr-003-queues"
    (project / "memrouter.toml").write_text('[search]\ntime_words = "off"\n')
    with open_router(project) as router:
        found = router.search("database last month", mode="lexical")  # "last month" is searched as words
        assert len(found) == 3 and not any(m.retriever == "time" for hit in found for m in hit.why)


def test_recency_decays_old_sprint_notes_and_leaves_long_term_alone(tmp_path: Path) -> None:
    root = tmp_path / ".serena" / "memories"
    (root / "sprints" / "s1").mkdir(parents=True)
    for name, day in (("old", "2026-09-01"), ("new", "2026-11-20")):
        (root / "sprints" / "s1" / f"{name}.md").write_text(f"---\ncreated: {day}\n---\n# Cache {name}\n\ncache\n")
    for name, day in (("old", "2026-01-01"), ("new", "2026-11-20")):
        (root / f"lt-{name}.md").write_text(f"---\ncreated: {day}\n---\n# Kept cache {name}\n\ncache\n")
    with Router.open(root=root, index_dir=tmp_path / "index", watch=False, clock=lambda: at("2026-11-23")) as router:
        found = {hit.name: hit for hit in router.search("cache", mode="lexical", channels=["sprint", "long_term"])}
    old, new = found["sprints/s1/old"], found["sprints/s1/new"]
    assert old.score < new.score and found["lt-old"].score == found["lt-new"].score
    decay = [m for m in old.why if m.retriever == "recency"]
    assert decay and 0.5 < decay[0].score < 0.6  # 83 days at a 14-day half-life: nearly the floor
    (tmp_path / "memrouter.toml").write_text("[search.recency]\nlong_term = 30\nsprint = 0\n")
    with Router.open(root=root, index_dir=tmp_path / "index", watch=False, clock=lambda: at("2026-11-23")) as router:
        found = {hit.name: hit for hit in router.search("cache", mode="lexical", channels=["sprint", "long_term"])}
    assert found["lt-old"].score < found["lt-new"].score  # long-term decays when configured
    assert found["sprints/s1/old"].score == found["sprints/s1/new"].score  # and sprint no longer does


@pytest.mark.parametrize(
    "toml",
    ['[search]\ntime_words = "sometimes"\n', "[search]\nrecency = 3\n", "[search.recency]\nsprint = -1\n",
     "[search.recency]\nsprint = true\n"],
)  # fmt: skip
def test_bad_time_settings_are_config_errors(tmp_path: Path, toml: str) -> None:
    (tmp_path / ".serena" / "memories").mkdir(parents=True)
    (tmp_path / "memrouter.toml").write_text(toml)
    with pytest.raises(ConfigError):
        Router.open(root=tmp_path / ".serena" / "memories", index_dir=tmp_path / "index")


def test_git_head_reads_loose_packed_and_worktree_refs(project: Path, tmp_path: Path) -> None:
    def rev(folder: Path) -> str:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True).stdout.strip()

    assert git_head(project) == rev(project)
    subprocess.run(["git", "pack-refs", "--all"], cwd=project, check=True)
    assert git_head(project) == rev(project)
    subprocess.run(["git", "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "other"], cwd=project, check=True)
    assert git_head(tmp_path / "wt") == rev(tmp_path / "wt")
    assert git_head(tmp_path) is None


def test_time_words_as_of_a_date_use_the_commit_times_known_then(project: Path) -> None:
    (project / "memrouter.toml").write_text('[search]\ntime_words = "filter"\n')
    with open_router(project) as router:
        assert names(router.search("database in June", as_of="2026-09-10", mode="lexical")) == ["adr/adr-012-caching"]
        # relative to the as_of date: "this month" is September 2026, when v1 was committed
        assert names(router.search("what changed this month", as_of="2026-09-10")) == ["database"]
        past = router.search("database PostgreSQL this month", as_of="2026-09-10", mode="lexical")
        assert names(past) == ["database"] and "15" in past[0].snippet  # the text as committed then


def test_get_dates_a_memory_from_git_unless_its_front_matter_does(project: Path) -> None:
    root = project / ".serena" / "memories"
    (root / "stated.md").write_text("---\ncreated: 2020-02-02\n---\n# Stated\n")
    (root / "loose.md").write_text("# Loose\n")
    os.utime(root / "loose.md", (at("2026-11-01"), at("2026-11-01")))
    with open_router(project) as router:
        database = router.get("database")
        assert (database.created, database.updated) == ("2026-09-03T10:00:00Z", "2026-10-20T10:00:00Z")
        stated = router.get("stated")
        assert stated.created == "2020-02-02" and stated.updated is not None  # the file time fills the gap only
        assert router.get("loose").created == "2026-11-01T00:00:00Z"


def test_the_same_content_in_two_channels_shows_once_the_newer_copy_winning(tmp_path: Path) -> None:
    root = tmp_path / ".serena" / "memories"
    (root / "sprints" / "s1").mkdir(parents=True)
    text = "# Same\n\nexact duplicate text zebra\n"
    (root / "same.md").write_text(text)
    (root / "sprints" / "s1" / "same.md").write_text(text)
    (root / "other.md").write_text("# Other\n\nzebra crossing\n")
    os.utime(root / "same.md", (at("2026-01-01"), at("2026-01-01")))
    os.utime(root / "sprints" / "s1" / "same.md", (at("2026-11-01"), at("2026-11-01")))
    with Router.open(root=root, index_dir=tmp_path / "index", watch=False, clock=lambda: at("2026-11-02")) as router:
        assert names(router.search("zebra duplicate", mode="lexical")) == ["sprints/s1/same", "other"]
        os.utime(root / "same.md", (at("2026-11-02"), at("2026-11-02")))
        router.refresh()
        assert names(router.search("zebra duplicate", mode="lexical")) == ["same", "other"]
