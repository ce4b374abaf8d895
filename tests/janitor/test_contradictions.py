"""Contradiction candidates: same subject, differing statements; rewordings and typos are not contradictions."""

from __future__ import annotations

from memrouter.ops.janitor.contradictions import MAX_GROUP, find_contradictions, statements
from memrouter.ops.janitor.records import Entry


def entry(name: str, body: str, title: str = "Staging database", **extra: str) -> Entry:
    return Entry(name, title, f"# {title}\n\n{body}\n", "", extra=dict(extra))


def pairs(*entries: Entry) -> set[tuple[str, str]]:
    found = find_contradictions(list(entries), list(range(len(entries))))  # later = newer
    return {(entries[c.older].name, entries[c.newer].name) for c in found}


def test_a_changed_key_value_number_or_negation_is_found() -> None:
    assert pairs(entry("a", "- port: 5432"), entry("b", "- port: 5433")) == {("a", "b")}
    assert pairs(entry("a", "**Database**: PostgreSQL 16"), entry("b", "**Database**: MySQL 8")) == {("a", "b")}
    assert pairs(entry("a", "The pool holds 20 connections at most."), entry("b", "The pool holds 50 connections at most.")) == {("a", "b")}  # fmt: skip
    assert pairs(entry("a", "The cache is enabled in production."), entry("b", "The cache isn't enabled in production.")) == {("a", "b")}  # fmt: skip


def test_rewordings_typos_swaps_and_additions_are_not_contradictions() -> None:
    assert pairs(entry("a", "- owner: platform"), entry("b", "- owner: platform team")) == set()
    assert (
        pairs(entry("a", "- lesson: verify before you trust"), entry("b", "- lesson: verify before yuo trust")) == set()
    )
    assert pairs(entry("a", "- lesson: verify then trust"), entry("b", "- lesson: verify, then really trust")) == set()
    assert pairs(entry("a", "See PRs 488 and 490 for the details."), entry("b", "See PRs 490 and 488 for the details.")) == set()  # fmt: skip
    assert pairs(entry("a", "- created: 2026-01-01"), entry("b", "- created: 2026-02-01")) == set()  # provenance


def test_only_memories_on_one_subject_are_compared() -> None:
    assert pairs(entry("a", "- port: 5432", title="Staging"), entry("b", "- port: 5433", title="Production")) == set()
    a = entry("a", "- port: 5432", title="One", entity="staging-db")
    b = entry("b", "- port: 5433", title="Two", entity="Staging DB")
    assert pairs(a, b) == {("a", "b")}
    crowd = [entry(f"m{i}", f"- port: {5000 + i}", title="Notes") for i in range(MAX_GROUP + 1)]
    assert pairs(*crowd) == set()  # a title that many memories share is not one subject


def test_a_key_a_memory_gives_twice_says_nothing() -> None:
    assert ("fact", "source") not in statements("- source: a\n- source: b\n")
    assert ("fact", "link") not in statements("- link: a\n- link: b\n")
    assert statements("- port: 5432\n")[("fact", "port")] == "5432"
    assert ("fact", "port") not in statements("```yaml\nport: 5432\n```\n")
