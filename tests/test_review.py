"""Memories pending review: never returned by a read path, and the queue that approves or rejects them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import SAMPLE, commit_all_as, write

from memrouter import Router
from memrouter.core.errors import Conflict, InvalidInput, NotFound

# Written to match every query below, in every retriever: its words, and graph links to what they find.
PENDING_NAME = "notes/unverified-claims"
PENDING_TEXT = (
    "---\nstatus: pending_review\nauthor: agent:bot\nkind: convention\ntags: [database]\n---\n"
    "# PostgreSQL flaky tests caching deployment commit messages\n\n"
    "I think PostgreSQL orders, flaky tests, caching, deployment windows and commit messages all changed.\n"
    "See [[adr/adr-001-postgres]] and mem:ci/flaky-tests; ADR-001 applies.\n"
)
QUERIES = (
    "postgresql orders", "flaky tests", "caching", "deployment windows", "commit messages", "ADR-001",
    "what changed this year", "flaky tests changed today",  # time phrases: the window's own listing, and a boost
)  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project: the sample memories and one pending memory, committed; hash embedder and the graph on."""
    project = tmp_path / "project"
    root = project / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(root, name, text)
    write(root, PENDING_NAME, PENDING_TEXT)
    (project / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n\n[search.weights]\ngraph = 1.0\n')
    (project / ".gitignore").write_text(".memrouter/\n")
    commit_all_as(project, "Ada", "ada@example.com")
    return project


@pytest.fixture
def router(project: Path) -> Iterator[Router]:
    with Router.open(root=project / ".serena" / "memories", watch=False) as opened:
        opened.refresh(embed=True)
        yield opened


def test_no_read_path_returns_a_pending_memory(router: Router) -> None:
    searches = {
        (query, mode, str(flags)): router.search(query, mode=mode, limit=50, **flags)
        for query in QUERIES
        for mode in ("lexical", "semantic", "hybrid")
        for flags in ({}, {"include_history": True, "include_archived": True}, {"kinds": ["convention"]})
    }
    assert router.effective_mode("hybrid") == "hybrid"  # vectors exist: the dense and graph retrievers run
    assert any(m.retriever == "graph" for hits in searches.values() for hit in hits for m in hit.why)
    for key, hits in searches.items():
        assert PENDING_NAME not in [hit.name for hit in hits], key
    for query in QUERIES:
        assert PENDING_NAME not in [hit.name for hit in router.search(query, as_of="HEAD", mode="lexical")]
    listings = [router.list(), router.list("notes"), router.list(kinds="convention"), router.list(tags="database")]
    for listed in listings:
        assert PENDING_NAME not in [item.name for item in listed]
    # The control: asking for the status finds it, in search and list alike.
    for mode in ("lexical", "semantic", "hybrid"):
        asked = router.search("flaky tests caching", mode=mode, statuses="pending_review")
        assert [hit.name for hit in asked] == [PENDING_NAME]
    assert [item.name for item in router.list(statuses="pending_review")] == [PENDING_NAME]
    assert [item.name for item in router.pending()] == [PENDING_NAME]
    assert router.get(PENDING_NAME).status == "pending_review"  # reading it by its exact name is allowed


def test_the_graph_calls_do_not_show_a_pending_memory(router: Router) -> None:
    from memrouter.core.errors import NotFound as GraphNotFound

    def names(items: list[object]) -> str:
        return json.dumps([item.to_dict() for item in items])  # type: ignore[attr-defined]

    assert PENDING_NAME not in names(router.related("adr/adr-001-postgres", depth=4))
    assert PENDING_NAME not in names(router.related("ADR-001", depth=4))
    assert PENDING_NAME not in names(router.neighbors("ci/flaky-tests"))
    assert PENDING_NAME not in json.dumps(router.get_entity("adr/adr-001-postgres").to_dict())
    assert PENDING_NAME not in router.graph_export("json")
    with pytest.raises(GraphNotFound):
        router.get_entity(PENDING_NAME)
    router.approve(PENDING_NAME, actor="user:Ada")  # the control: once approved, the graph shows it
    assert PENDING_NAME in names(router.related("adr/adr-001-postgres", depth=2))


def test_pending_memories_survive_an_index_rebuild(router: Router, project: Path) -> None:
    router.refresh(full=True)
    assert [item.name for item in router.pending()] == [PENDING_NAME]
    index_dir = router.config.index_dir
    router.close()
    shutil.rmtree(index_dir)
    with Router.open(root=project / ".serena" / "memories", watch=False) as fresh:
        assert [item.name for item in fresh.pending()] == [PENDING_NAME]
        assert PENDING_NAME not in [hit.name for hit in fresh.search("flaky tests", mode="lexical", limit=50)]


def test_approve_by_another_makes_it_active_and_keeps_the_author(router: Router) -> None:
    with pytest.raises(InvalidInput, match="cannot approve"):
        router.approve(PENDING_NAME, actor="agent:bot")
    assert router.get(PENDING_NAME).status == "pending_review"
    with pytest.raises(Conflict):
        router.approve(PENDING_NAME, actor="user:Ada", expected_hash="0" * 64)
    before = router.get(PENDING_NAME)
    approved = router.approve(PENDING_NAME, actor="user:Ada", reason="checked the ADR", expected_hash=before.hash)
    assert (approved.status, approved.author, approved.verified_by) == ("active", "agent:bot", "user:Ada")
    assert approved.body == before.body
    assert PENDING_NAME in [hit.name for hit in router.search("flaky tests caching", mode="lexical")]
    assert router.pending() == []
    with pytest.raises(InvalidInput, match="not pending"):
        router.approve(PENDING_NAME, actor="user:Ada")
    with pytest.raises(InvalidInput, match="not pending"):
        router.reject("adr/adr-001-postgres", actor="user:Ada", reason="no")


def test_an_agent_cannot_approve_what_it_wrote_without_an_author(router: Router) -> None:
    from memrouter.ops.audit import acting_as

    with acting_as("agent:quiet"):  # a verbatim write (Serena's write_memory): no author in the file
        router.save("---\nstatus: pending_review\n---\n# Guess\n\nMaybe it is Redis.\n", "notes/guess")
    assert router.get("notes/guess").author is None
    with pytest.raises(InvalidInput, match="cannot approve"):
        router.approve("notes/guess", actor="agent:quiet")
    assert router.approve("notes/guess", actor="agent:other").verified_by == "agent:other"


def test_reject_deletes_the_file_and_the_audit_log_keeps_why(router: Router) -> None:
    with pytest.raises(InvalidInput, match="needs a reason"):
        router.reject(PENDING_NAME, actor="agent:reviewer", reason="  ")
    pending_hash = router.get(PENDING_NAME).hash
    gone = router.reject(PENDING_NAME, actor="agent:reviewer", reason="a guess with no evidence")
    assert gone.hash == pending_hash
    with pytest.raises(NotFound):
        router.get(PENDING_NAME)
    assert router.pending() == []
    [line] = [entry for entry in router.audit(name=PENDING_NAME) if entry.op == "reject"]
    assert (line.actor, line.before, line.after, line.verdict) == ("agent:reviewer", pending_hash, None, "rejected")
    assert line.reason == "a guess with no evidence"
    log = (router.config.index_dir / "audit.jsonl").read_text()
    assert "I think PostgreSQL" not in log and "flaky tests caching" not in log  # never the content


def test_pending_memories_are_never_synced(project: Path) -> None:
    from memrouter.testing.servers import serve_http

    with serve_http() as server:
        (project / "memrouter.toml").write_text(f'[backends.forgetful]\nurl = "{server.url}"\ntimeout = 10\n')
        with Router.open(root=project / ".serena" / "memories", watch=False) as router:
            report = router.sync()[0]
            assert report.ok and PENDING_NAME not in report.created
            assert len(report.created) == len(SAMPLE)
            approved = router.approve(PENDING_NAME, actor="user:Ada")
            assert approved.status == "active"
            assert router.sync()[0].created == [PENDING_NAME]  # once approved, it goes
            # Held again (an edit back to pending): its remote copy is retired, never left to be recalled.
            router.edit(PENDING_NAME, "status: active", "status: pending_review")
            again = router.sync()[0]
            assert PENDING_NAME in again.obsoleted, again.to_dict()


def test_review_cli(project: Path) -> None:
    from click.testing import CliRunner

    from memrouter.cli import main

    runner = CliRunner()
    base = ["--root", str(project / ".serena" / "memories")]

    def cli(*args: str) -> tuple[int, str]:
        result = runner.invoke(main, [*base, *args], catch_exceptions=False)
        return result.exit_code, result.output

    code, out = cli("review", "list", "--format", "json")
    assert code == 0 and [m["name"] for m in json.loads(out)["memories"]] == [PENDING_NAME]
    listed = json.loads(cli("list", "--format", "json")[1])["memories"]
    assert listed and PENDING_NAME not in [m["name"] for m in listed]
    for query in QUERIES:
        found = json.loads(cli("search", query, "--format", "json", "--limit", "50")[1])["results"]
        assert PENDING_NAME not in [hit["name"] for hit in found], query
    code, out = cli("review", "show", PENDING_NAME, "--format", "json")
    shown = json.loads(out)
    assert shown["provenance"]["author"] == "agent:bot" and shown["provenance"]["created"]  # created: from git
    assert shown["provenance"]["from_git"] == ["created"]
    code, out = cli("review", "approve", PENDING_NAME, "--agent", "bot")
    assert code == 2 and "cannot approve" in out
    code, out = cli("review", "reject", PENDING_NAME, "--reason", "unsupported", "--format", "json")
    assert code == 0 and json.loads(out)["rejected"] == PENDING_NAME
    code, out = cli("audit", "--name", PENDING_NAME, "--format", "json")
    [entry] = json.loads(out)["entries"]
    assert (entry["actor"], entry["op"], entry["reason"]) == ("user:Ada", "reject", "unsupported")
